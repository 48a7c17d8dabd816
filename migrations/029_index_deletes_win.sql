-- Deletes win (issue 24): a record's delete is kept as a tombstone, so a backfill that read the repo before
-- the delete, or a replayed event older than it, cannot bring the record back.
create table index_tombstones (
  uri text primary key,
  -- The deleting commit's repo rev, when the event carried one (TIDs sort as they were made).
  rev text,
  deleted_at timestamptz not null default now()
);
create index index_tombstones_age on index_tombstones (deleted_at);

-- Which version a row is: the commit rev that wrote it (when known), when it was written, and whether only a
-- backfill (a read an anonymous request started) vouches for it: such rows are not listed for everyone.
alter table index_sessions add column rev text, add column written_at timestamptz not null default now(),
  add column from_backfill boolean not null default false;
alter table index_messages add column rev text, add column written_at timestamptz not null default now(),
  add column from_backfill boolean not null default false;
create index index_sessions_backfilled on index_sessions (did) where from_backfill;
-- Everyone's list reads newest first past what only a backfill vouches for.
create index index_sessions_listed on index_sessions (indexed_at desc, uri desc) where not from_backfill;
create index index_messages_backfilled on index_messages (did) where from_backfill;

-- An account that is not active (deactivated, suspended, desynchronized, throttled, …): null when active.
alter table index_actors add column status text;

-- Jetstream v2 numbers its events (`cursor`, per instance): resuming from that number on the same instance is
-- exact, where a time must be rewound. Kept with the instance's host; the time stays for any other instance.
alter table index_state add column jetstream_seq bigint, add column jetstream_host text;
