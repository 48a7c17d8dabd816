-- A Conversation published to its Player's PDS: one click.aligned.chat.session record and one
-- click.aligned.chat.message record per turn. The plan (every rkey and record) is stored before the first
-- write, so a publish that fails part-way resumes with no duplicate and no gap.
create table publications (
  conversation_id uuid primary key references conversations (id),
  player_id uuid not null references players (id) on delete cascade,
  did text not null,
  session_rkey text not null,
  title text not null,
  status text not null check (status in ('publishing', 'published', 'unpublishing', 'failed')),
  error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table publication_records (
  conversation_id uuid not null references publications (conversation_id) on delete cascade,
  rkey text not null,
  collection text not null,
  -- null for the session record
  message_id uuid,
  -- reading order: 0 is the session, then the turns
  position integer not null,
  -- the Player's choices for this turn (withheld, redactions, step summaries, refs, mentions)
  choice jsonb not null default '{}',
  -- the exact record on (or bound for) the PDS
  record jsonb not null,
  -- what the PDS holds: null before the first write
  cid text,
  -- the write still to do: create, update or delete; null when the PDS matches `record`
  pending text check (pending in ('create', 'update', 'delete')),
  primary key (conversation_id, rkey)
);
create index publication_records_pending on publication_records (conversation_id, position) where pending is not null;
