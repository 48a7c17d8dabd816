-- What replies that no longer exist cost: a Regenerate deletes the replies it answers again, and deleting a
-- Conversation deletes all of them, but the Provider was paid for each. Usage reads these with the live rows.
create table discarded_usage (
  id bigserial primary key,
  player_id uuid not null references players (id) on delete cascade,
  -- No foreign key: the Conversation may be gone; its title is kept for the per-Conversation view.
  conversation_id uuid not null,
  conversation_title text,
  npc_id uuid,
  npc_name text,
  created_at timestamptz not null,
  input_tokens integer,
  output_tokens integer,
  cost_usd numeric
);
create index discarded_usage_player_created on discarded_usage (player_id, created_at);
