-- The Player's publishing choices, kept apart from what is on the PDS: they survive an unpublish as the draft
-- for next time, and the session rkey is kept so publishing again brings shared links back to life.
create table publication_drafts (
  conversation_id uuid primary key references conversations (id) on delete cascade,
  -- the session record's rkey, reserved at the first publish and reused after an unpublish
  session_rkey text not null,
  -- the title the Player wrote; null means the default made from the published text
  title text,
  -- the Player's choices by Message id: withheld, redactions, step summaries, refs, mentions
  choices jsonb not null default '{}',
  -- the words each turn's redactions covered at the last publish, by Message id: a turn that has since gone (a
  -- regenerated reply) keeps covering its words until the Player lets them go
  words jsonb not null default '{}',
  updated_at timestamptz not null default now()
);

insert into publication_drafts (conversation_id, session_rkey, title, choices)
select p.conversation_id, p.session_rkey, null,
  coalesce((select jsonb_object_agg(r.message_id::text, r.choice) from publication_records r
    where r.conversation_id = p.conversation_id and r.message_id is not null), '{}')
from publications p;
