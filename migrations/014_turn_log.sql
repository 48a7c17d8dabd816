-- Each turn a Player starts (a Message or a regenerate), for the turns-a-minute limit: a row is never deleted
-- with the Message it started, so regenerating or deleting a Conversation cannot reset the count.
create table turn_log (
  player_id uuid not null,
  at timestamptz not null default now()
);
create index turn_log_player on turn_log (player_id, at);
