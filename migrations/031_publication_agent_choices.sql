-- What a publication's session says of each NPC besides its name and Job Title, by NPC id: a description in the
-- Player's own words, or none (ADR 0047). Kept with the other choices across unpublishing.
alter table publication_drafts add column agents jsonb not null default '{}';
