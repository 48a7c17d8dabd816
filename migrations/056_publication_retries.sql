-- A publication a run left part-way (failed, or an unpublish not yet done) is tried again in the background, by
-- whichever server takes it first (ADR 0091): when it falls due, and how many failures in a row so far.
alter table publications add column retry_due_at timestamptz, add column retry_failures integer not null default 0;
create index publications_retry_due on publications (retry_due_at) where retry_due_at is not null;
