-- Search across a Player's Conversations (issue 18): full text of each Message's flat text (text Parts only,
-- never reasoning). The 'simple' configuration does not stem, so it finds words in any language as typed;
-- prefix matching on the last word covers the rest.
alter table messages add column tsv tsvector generated always as (to_tsvector('simple', left(text, 200000))) stored;
create index messages_search on messages using gin (tsv);
