-- Tokens spent per UTC day, per Player and (under the all-zero id) for the whole Village: what the daily budgets
-- are checked against at every turn, one row read instead of a sum over the day's replies.
create table daily_spend (
  day date not null,
  player_id uuid not null,
  tokens bigint not null default 0,
  primary key (day, player_id)
);

insert into daily_spend (day, player_id, tokens)
select (m.created_at at time zone 'utc')::date, c.player_id,
  sum(coalesce(m.input_tokens, 0) + coalesce(m.output_tokens, 0))
from messages m join conversations c on c.id = m.conversation_id
where m.role = 'npc' and m.created_at >= now() - interval '2 days'
group by 1, 2;

insert into daily_spend (day, player_id, tokens)
select day, '00000000-0000-0000-0000-000000000000', sum(tokens) from daily_spend group by day;
