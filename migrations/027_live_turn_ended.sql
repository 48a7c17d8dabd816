-- Live publishing: when the Conversation's last turn ended, so an append never takes a turn younger than the
-- delay in which the Player may hold it back (a retry while a reply streamed could otherwise catch one ending).
alter table publications add column live_turn_ended_at timestamptz;
