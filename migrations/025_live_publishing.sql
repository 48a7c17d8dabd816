-- Live publishing (issue 18): a published Conversation marked live has each new turn, once complete, appended to
-- its published session in the background, after a delay in which the Player can hold a turn back.
alter table publications add column live boolean not null default false;
-- The choice for new turns made in advance: published, or withheld (a visible hole) unless the Player releases it.
alter table publications add column live_withhold boolean not null default false;
alter table publications add column live_delay_seconds integer not null default 30
  check (live_delay_seconds between 0 and 3600);
-- When the next append is due (set when a turn ends; cleared when a server takes it).
alter table publications add column live_due_at timestamptz;
create index publications_live_due on publications (live_due_at) where live_due_at is not null;
