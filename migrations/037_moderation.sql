-- The operator's moderation (issue 31). Rows are never deleted: lifting one keeps who, when and why, so every
-- row is also the audit of what was done.

-- A thread (a session's at:// URI) or an author (a DID) hidden from this instance's reader, XRPC and previews.
create table takedowns (
  id uuid primary key default gen_random_uuid(),
  subject text not null,
  reason text not null,
  created_by text not null,
  created_at timestamptz not null default now(),
  lifted_by text,
  lifted_at timestamptz,
  lift_reason text
);
create unique index takedowns_active on takedowns (subject) where lifted_at is null;

-- A Player who may not start turns on this instance.
create table player_blocks (
  id uuid primary key default gen_random_uuid(),
  player_id uuid not null references players (id) on delete cascade,
  reason text not null,
  created_by text not null,
  created_at timestamptz not null default now(),
  lifted_by text,
  lifted_at timestamptz,
  lift_reason text
);
create unique index player_blocks_active on player_blocks (player_id) where lifted_at is null;

-- A reader's report of a thread, for the admins. No address is kept: the per-address limit counts in memory.
create table thread_reports (
  id uuid primary key default gen_random_uuid(),
  subject text not null,
  reason text not null,
  reporter_did text,
  created_at timestamptz not null default now()
);
create index thread_reports_recent on thread_reports (created_at desc);
