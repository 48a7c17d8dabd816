-- The Village's tokens per UTC day, spread over 16 rows (slots) instead of one row of daily_spend under the
-- all-zero id. Every reply's end and every charge added to that one row, so the ends of all turns, from every
-- instance, queued on its row lock (Lock:transactionid in pg_stat_activity under two instances). A Player always
-- writes the same slot (a hash of the Player), after the Player's own daily_spend row: that Player's writes were
-- ordered by that row already, and Players who share a slot queue on it a sixteenth as often as all did on the one
-- row. Readers sum the day's slots.
create table village_spend (
  day date not null,
  slot smallint not null check (slot between 0 and 15),
  tokens bigint not null default 0,
  primary key (day, slot)
);

insert into village_spend (day, slot, tokens)
select day, 0, tokens from daily_spend where player_id = '00000000-0000-0000-0000-000000000000';

delete from daily_spend where player_id = '00000000-0000-0000-0000-000000000000';
