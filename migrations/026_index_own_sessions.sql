-- A turn is indexed only in a session of its own author (any repo can hold a record naming anyone's session):
-- turns indexed before that rule, in somebody else's session, leave the index.
delete from index_messages
where session_uri not like 'at://' || did || '/click.aligned.chat.session/%';
