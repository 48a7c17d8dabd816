-- Time-bounded leases (issue 25, ADR 0053): a lock that holds no connection while its holder waits on someone
-- else's server. Taken with one statement when free or expired, renewed while the holder works, deleted on
-- release; a holder that dies leaves a row that simply expires.
create table leases (
  name text primary key,
  holder uuid not null,
  expires_at timestamptz not null
);
