-- A Conversation is a tree (issue 18): each Message answers its parent, and the transcript is one path through
-- the tree, root to head. `on_path` marks that path, so every reader (transcript, history, summary, publishing)
-- reads it as before, with one more condition; moving to another branch rewrites the marks (ADR 0042).
alter table messages add column parent_id uuid references messages (id) on delete cascade;
alter table messages add column on_path boolean not null default true;
-- When it last joined the path: switching to a branch returns to where it was left (its most recently shown leaf).
alter table messages add column shown_at timestamptz not null default now();
-- Every Conversation so far is one path: each Message's parent is the one before it.
update messages m set parent_id = p.prev
from (select id, lag(id) over (partition by conversation_id order by seq) as prev from messages) p
where p.id = m.id and p.prev is not null;
create index messages_children on messages (conversation_id, parent_id, seq);
-- A Message's children by its id alone: the branch walk, and the foreign key's cascade when Messages are deleted.
create index messages_parent on messages (parent_id, shown_at desc, seq desc);
