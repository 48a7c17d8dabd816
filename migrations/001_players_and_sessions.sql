-- A Player is an ATProto account, keyed by DID; the handle is refreshed at each sign-in.
create table players (
  id uuid primary key default gen_random_uuid(),
  did text not null unique,
  handle text,
  created_at timestamptz not null default now()
);

-- The web session: an opaque random cookie whose SHA-256 alone is stored.
create table sessions (
  token_hash bytea primary key,
  player_id uuid not null references players (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index sessions_player on sessions (player_id);
