-- Characters as their makers wrote them (issue 29): every field of a character card (SillyTavern V1/V2/V3) has
-- its column, so an import keeps them apart and an export gives them back. `prompt` is the card's system prompt.
alter table npcs
  add column personality text not null default '',
  add column scenario text not null default '',
  -- The first Message of a new Conversation with this NPC; alternate greetings are its siblings (branches).
  add column greeting text not null default '',
  add column alternate_greetings jsonb not null default '[]' check (jsonb_typeof(alternate_greetings) = 'array'),
  add column example_messages text not null default '',
  add column post_history_instructions text not null default '',
  add column creator text not null default '',
  add column creator_notes text not null default '',
  add column character_version text not null default '',
  add column tags jsonb not null default '[]' check (jsonb_typeof(tags) = 'array'),
  -- Other front-ends' data, kept opaque and given back on export (bounded at the edge: src/village/npcs.ts).
  add column extensions jsonb not null default '{}' check (jsonb_typeof(extensions) = 'object'),
  -- A V3 card's fields this app has no use for (nickname, assets, source, dates…), given back on export.
  add column card_extra jsonb not null default '{}' check (jsonb_typeof(card_extra) = 'object');

-- A lorebook (a card's character_book, or a World Info file) belongs to the NPCs it is attached to, never to a
-- Player's Memory. `book` is the V2 character_book as read (entries with their keys and options), so it is
-- exported as it came.
create table lorebooks (
  id uuid primary key default gen_random_uuid(),
  player_id uuid not null references players (id) on delete cascade,
  name text not null default '',
  book jsonb not null check (jsonb_typeof(book) = 'object'),
  created_at timestamptz not null default now()
);
create index lorebooks_player on lorebooks (player_id, created_at);

create table npc_lorebooks (
  npc_id uuid not null references npcs (id) on delete cascade,
  lorebook_id uuid not null references lorebooks (id) on delete cascade,
  -- The card's own character_book (exported with the card); others are attached World Info.
  embedded boolean not null default false,
  primary key (npc_id, lorebook_id)
);
create index npc_lorebooks_book on npc_lorebooks (lorebook_id);
create unique index npc_lorebooks_one_embedded on npc_lorebooks (npc_id) where embedded;

-- The card's picture (its PNG with the card's text chunks taken out), stored as a blob like attachments.
alter table npcs add column avatar_blob_id uuid references blobs (id) on delete set null;
create index npcs_avatar_blob on npcs (avatar_blob_id) where avatar_blob_id is not null;

-- Who answers a Player's Message in a Party: one NPC (the one addressed, else the last to speak), or each NPC
-- in turn, as SillyTavern's group chats can (bounded by the Village's hop limit).
alter table conversations add column reply_mode text not null default 'one' check (reply_mode in ('one', 'each'));
