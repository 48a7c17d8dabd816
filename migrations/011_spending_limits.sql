-- What one Player (and the whole Village) may spend: Village settings an admin can change.
alter table village_settings
  add column turns_per_minute integer not null default 20 check (turns_per_minute between 1 and 10000),
  add column concurrent_streams integer not null default 3 check (concurrent_streams between 1 and 1000),
  add column player_daily_tokens bigint not null default 2000000 check (player_daily_tokens > 0),
  add column village_daily_tokens bigint not null default 50000000 check (village_daily_tokens > 0),
  add column max_message_chars integer not null default 20000 check (max_message_chars between 1 and 100000),
  add column max_npcs integer not null default 100 check (max_npcs between 1 and 100000),
  add column max_conversations integer not null default 2000 check (max_conversations between 1 and 1000000);

-- The Player turns of the last minute, and the day's spend, are read at every turn.
create index messages_player_turns on messages (created_at) where role = 'player';
