create table conversations (
  id uuid primary key default gen_random_uuid(),
  player_id uuid not null references players (id) on delete cascade,
  title text,
  -- The rolling summary covers every Message with seq <= summary_through.
  summary text not null default '',
  summary_through bigint not null default 0,
  -- The live server instance running a turn here, if any (see db/instance.ts).
  turn_owner integer,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index conversations_recent on conversations (player_id, updated_at desc, id);

create table conversation_participants (
  conversation_id uuid not null references conversations (id) on delete cascade,
  npc_id uuid not null references npcs (id) on delete cascade,
  position integer not null,
  primary key (conversation_id, npc_id)
);

create table messages (
  id uuid primary key default gen_random_uuid(),
  seq bigserial not null unique,
  conversation_id uuid not null references conversations (id) on delete cascade,
  role text not null check (role in ('player', 'npc')),
  npc_id uuid references npcs (id) on delete set null,
  -- Kept beside npc_id so attribution and the transcript survive the NPC being deleted.
  npc_name text,
  -- Parts as the fold produced them; null on rows written before Parts existed.
  parts jsonb,
  -- The flattened text: text Parts only, never reasoning.
  text text not null default '',
  status text not null default 'complete'
    check (status in ('streaming', 'complete', 'stopped', 'failed', 'interrupted')),
  error text,
  provider text,
  model text,
  input_tokens integer,
  output_tokens integer,
  reasoning_tokens integer,
  cached_input_tokens integer,
  -- History budget estimate at four characters per token (seed 003).
  token_estimate integer generated always as ((length(text) + 3) / 4) stored,
  -- The server instance streaming this reply while status = 'streaming'.
  instance_id integer,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index messages_conversation on messages (conversation_id, seq);
create index messages_streaming on messages (instance_id) where status = 'streaming';
