-- Every capability is a grant: this NPC may use this Tool. A Tool nobody granted is one the model cannot see.
create table mcp_servers (
  id uuid primary key default gen_random_uuid(),
  player_id uuid not null references players (id) on delete cascade,
  name text not null,
  url text not null,
  -- request headers (e.g. an Authorization secret); never sent to the browser in full
  headers jsonb not null default '{}',
  created_at timestamptz not null default now()
);

create table skills (
  id uuid primary key default gen_random_uuid(),
  player_id uuid not null references players (id) on delete cascade,
  name text not null,
  description text not null,
  instructions text not null,
  created_at timestamptz not null default now(),
  unique (player_id, name)
);

create table grants (
  id uuid primary key default gen_random_uuid(),
  npc_id uuid not null references npcs (id) on delete cascade,
  kind text not null check (kind in ('sandbox', 'memory', 'skill', 'mcp')),
  skill_id uuid references skills (id) on delete cascade,
  mcp_server_id uuid references mcp_servers (id) on delete cascade,
  created_at timestamptz not null default now(),
  check ((kind = 'skill') = (skill_id is not null) and (kind = 'mcp') = (mcp_server_id is not null))
);
create unique index grants_once on grants (npc_id, kind, coalesce(skill_id, mcp_server_id, '00000000-0000-0000-0000-000000000000'));

-- The Player's Memory: what NPCs were asked to remember, recalled by full-text search.
create table memories (
  id uuid primary key default gen_random_uuid(),
  player_id uuid not null references players (id) on delete cascade,
  text text not null,
  npc_name text,
  tsv tsvector generated always as (to_tsvector('english', text)) stored,
  created_at timestamptz not null default now()
);
create index memories_search on memories using gin (tsv);
create index memories_player on memories (player_id, created_at desc);
