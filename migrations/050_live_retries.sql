-- A live append that failed (the PDS out of reach, a sign-in being renewed, a write refused part-way) falls due
-- again after a wait that doubles with each failure in a row, instead of waiting for the next turn: the last turn
-- of a Conversation must not stay unpublished because the PDS blinked once. Reset by the next append that goes out.
alter table publications add column live_failures integer not null default 0;
