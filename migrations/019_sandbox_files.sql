-- A Conversation's sandbox files live in PostgreSQL (issue 17): any server instance can run the next command.
-- Each instance keeps a working copy on its disk, refreshed when the version here is newer than its own.
-- File bytes are blobs (ADR 0035), stored once per content like attachments.
create table sandbox_files (
  conversation_id uuid not null references conversations (id) on delete cascade,
  path text not null,
  blob_id uuid references blobs (id),
  primary key (conversation_id, path)
);
create index sandbox_files_blob on sandbox_files (blob_id);

create table sandbox_versions (
  conversation_id uuid primary key references conversations (id) on delete cascade,
  version bigint not null
);
