-- The AppView's index of click.aligned.chat.* records from the network (ours and other apps').
create table index_sessions (
  uri text primary key,
  did text not null,
  rkey text not null,
  cid text not null,
  record jsonb not null,
  created_at timestamptz,
  indexed_at timestamptz not null default now()
);
create index index_sessions_recent on index_sessions (indexed_at desc, uri);
create index index_sessions_author on index_sessions (did, rkey desc);

create table index_messages (
  uri text primary key,
  did text not null,
  rkey text not null,
  session_uri text not null,
  cid text not null,
  record jsonb not null,
  -- The messageView as JSON text, rendered once at index time: getThread concatenates these.
  view text not null,
  indexed_at timestamptz not null default now()
);
create index index_messages_thread on index_messages (session_uri, rkey);
create index index_messages_author on index_messages (did);

create table index_actors (
  did text primary key,
  handle text,
  backfilled_at timestamptz
);

-- One row: where the firehose consumer is, and how many records it refused.
create table index_state (
  id boolean primary key default true check (id),
  cursor bigint,
  skipped bigint not null default 0,
  updated_at timestamptz not null default now()
);
insert into index_state (id) values (true);
