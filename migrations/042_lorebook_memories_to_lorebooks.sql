-- Lorebooks imported before issue 29 (issue 18's card import, migration 022) became Player-wide Memory: one row
-- per enabled entry, marked `memories.lorebook_of` = the card's NPC, its text "(key1, key2) content" (keys joined
-- by ", ", no parentheses when the entry had none). Every NPC with the Memory grant recalled them, so one card's
-- lore leaked into other NPCs' prompts. Here each NPC's rows become a lorebook of that NPC alone (ADR 0062):
-- - an entry with keys: triggered by those keys (`constant` false, as cards mostly have them); one without keys
--   is `constant` (it had no keys to be triggered by, and the NPC knew it before);
-- - the book is the NPC's own (`embedded`, exported with its card, as the Memory rows were) unless the NPC already
--   has one (the card imported again since), then it is attached beside it, so nothing is lost;
-- - the Memory rows go, so Memory is the Player's own notes again.
-- Not recoverable from the rows: keys holding ", " (split apart), disabled entries (never imported), the book's
-- name (the NPC's name is used), and the other entry options (SillyTavern's defaults).
create temp table lorebook_memories on commit drop as
with rows as (
  select m.lorebook_of as npc_id, m.text,
    row_number() over (partition by m.lorebook_of order by m.created_at, m.id) - 1 as n,
    m.created_at, m.id,
    regexp_match(m.text, '^\(([^()]*)\) (.*)$') as parts
  from memories m
  where m.lorebook_of is not null
),
entries as (
  select npc_id, n, created_at, id,
    coalesce(
      (select jsonb_agg(k order by i) from unnest(string_to_array(parts[1], ', ')) with ordinality as s (k, i)
        where btrim(k) <> ''),
      '[]'::jsonb) as keys,
    coalesce(parts[2], text) as content
  from rows
)
select npc.id as npc_id, npc.player_id, npc.name, gen_random_uuid() as book_id,
  exists (select 1 from npc_lorebooks o where o.npc_id = npc.id and o.embedded) as has_own,
  jsonb_agg(jsonb_build_object(
    'id', e.n,
    'keys', e.keys,
    'secondary_keys', '[]'::jsonb,
    'content', e.content,
    'enabled', true,
    'insertion_order', e.n,
    'constant', e.keys = '[]'::jsonb,
    'selective', false,
    'comment', '',
    'extensions', '{}'::jsonb
  ) order by e.created_at, e.id) as entries
from entries e join npcs npc on npc.id = e.npc_id
group by npc.id;

insert into lorebooks (id, player_id, name, book)
select book_id, player_id, left(name, 200),
  jsonb_build_object('name', name, 'extensions', '{}'::jsonb, 'entries', entries)
from lorebook_memories;

insert into npc_lorebooks (npc_id, lorebook_id, embedded)
select npc_id, book_id, not has_own from lorebook_memories;

delete from memories where lorebook_of is not null;
