-- Frames of replies followed from another server instance (ADR 0037): written by the instance writing the reply
-- only while someone elsewhere follows it, read by the instances serving those viewers. Unlogged: after a
-- crash they are worth nothing (the reply is interrupted), and they are swept a minute after the reply ends.
create unlogged table reply_frames (
  message_id uuid not null,
  seq integer not null,
  frame jsonb not null,
  created_at timestamptz not null default now(),
  primary key (message_id, seq)
);
