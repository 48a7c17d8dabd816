-- An NPC imported from a character card keeps the card's lorebook as Memory (issue 18). Those memories name the
-- NPC they came with, so its card can be exported with them, and they go when it goes.
alter table memories add column lorebook_of uuid references npcs (id) on delete cascade;
create index memories_lorebook on memories (lorebook_of) where lorebook_of is not null;
