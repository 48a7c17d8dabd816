-- ATProto OAuth: pending authorizations (state) and sessions (tokens + DPoP key), keyed as the client asks.
create table oauth_states (
  key text primary key,
  value jsonb not null,
  created_at timestamptz not null default now()
);

create table oauth_sessions (
  did text primary key,
  value jsonb not null,
  updated_at timestamptz not null default now()
);
