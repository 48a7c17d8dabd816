-- The Village: one row of instance-wide settings.
create table village_settings (
  id boolean primary key default true check (id),
  default_provider text,
  default_model text,
  hop_limit integer not null default 6 check (hop_limit between 0 and 100),
  history_budget integer not null default 60000 check (history_budget between 1000 and 10000000),
  updated_at timestamptz not null default now(),
  updated_by text
);
insert into village_settings (id) values (true);

create table npcs (
  id uuid primary key default gen_random_uuid(),
  player_id uuid not null references players (id) on delete cascade,
  name text not null,
  job_title text not null default '',
  description text not null default '',
  prompt text not null default '',
  provider text,
  model text,
  thinking boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index npcs_player on npcs (player_id, created_at);
