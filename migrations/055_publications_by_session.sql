-- The reader covers what it looks up beside a thread published from here (a linked post's text, a mentioned
-- account's handle) with that Conversation's cover, found by the thread's session: its author's DID and rkey.
-- Asked on every read of every thread, so found by an index, not a scan of every publication.
create index if not exists publications_session on publications (did, session_rkey);
