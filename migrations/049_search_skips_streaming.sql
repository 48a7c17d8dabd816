-- A reply still streaming has no search vector: each checkpoint rewrote `tsv` (to_tsvector over the whole text so
-- far), so every checkpoint of every streaming reply was a non-HOT update that also wrote each of the table's
-- indexes, the GIN one included. With `tsv` null until the reply ends, a checkpoint changes no indexed column.
-- The vector is made once, by the write that ends the reply (or marks it interrupted); search finds a reply's
-- words from then on. Adding the column again rewrites the table once, as adding it did (021).
drop index messages_search;
alter table messages drop column tsv;
alter table messages add column tsv tsvector generated always as (
  case when status = 'streaming' then null else to_tsvector('simple', left(text, 200000)) end) stored;
create index messages_search on messages using gin (tsv);
