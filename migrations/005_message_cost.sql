-- What a reply cost in USD, from a maintained model registry (tokenlens) when the Model's price is known.
alter table messages add column cost_usd double precision;
create index messages_usage on messages (created_at) where role = 'npc';
