-- Attachments (ADR 0035). Bytes are stored once per content: a blob is named by its SHA-256 once its upload has
-- finished (null while it streams in), and held as ordered chunks so no file is ever read or written whole.
create table blobs (
  id uuid primary key default gen_random_uuid(),
  sha256 bytea unique,
  size bigint not null default 0,
  created_at timestamptz not null default now()
);

create table blob_chunks (
  blob_id uuid not null references blobs (id) on delete cascade,
  idx integer not null,
  data bytea not null,
  primary key (blob_id, idx)
);
-- Stored out of line without compression: pictures and PDFs are compressed already, and compressing every
-- chunk of a text file costs more CPU per upload than the disk it saves.
alter table blob_chunks alter column data set storage external;

-- One attachment per use: a Player's upload (pending until a Message names it) or a file an NPC shared. Its
-- Conversation going takes it along; the blob goes when nothing else references it.
create table attachments (
  id uuid primary key default gen_random_uuid(),
  player_id uuid not null references players (id) on delete cascade,
  conversation_id uuid not null references conversations (id) on delete cascade,
  message_id uuid references messages (id) on delete cascade,
  blob_id uuid not null references blobs (id),
  kind text not null check (kind in ('file', 'url')),
  name text not null,
  media_type text not null,
  size bigint not null,
  tokens integer not null,
  url text,
  title text,
  created_at timestamptz not null default now()
);
create index attachments_blob on attachments (blob_id);
create index attachments_message on attachments (message_id);
create index attachments_player on attachments (player_id, kind, created_at);
create index attachments_pending on attachments (conversation_id) where message_id is null;

alter table village_settings
  add column max_attachment_mb integer not null default 20 check (max_attachment_mb between 1 and 1024),
  add column max_attachments_per_message integer not null default 10
    check (max_attachments_per_message between 1 and 100),
  add column player_attachment_mb integer not null default 1024 check (player_attachment_mb between 1 and 1000000),
  add column attachment_types text[] not null default
    '{image/png,image/jpeg,image/gif,image/webp,application/pdf,text/plain,text/markdown,text/csv,application/json}';
