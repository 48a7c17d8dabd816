-- Rate limits counted in PostgreSQL, so every server instance counts against the same limit (a limit per
-- instance let N instances allow N times as much). One row per limiter and key (an address or a Player).
create table rate_limits (
  key text primary key,
  hits integer not null,
  reset_at timestamptz not null
);
create index rate_limits_reset on rate_limits (reset_at);
