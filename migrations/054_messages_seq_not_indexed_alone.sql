-- A Conversation's latest Messages (the claim's path leaf, the history page, a regenerate's Player Message) are
-- read as `where conversation_id = $1 … order by seq desc limit n`. With seq indexed alone (its unique
-- constraint), the planner read a Conversation that holds a large share of all Messages (a long roleplay, among
-- the column's most common values) backward through every Message written since, in every Conversation: a Player
-- back at a long Conversation after a busy week paid a scan of the Village's week on each turn, under their
-- spending lock. Only (conversation_id, seq) can serve that order now. seq stays unique as its sequence makes it:
-- nothing writes it but the sequence, and nothing reads Messages by seq alone (ADR 0088).
-- Dropping it takes the table's strongest lock: waited for 10 s at most (behind a long reader, every insert would
-- queue behind this), then the start fails and is tried again.
set local lock_timeout = '10s';
alter table messages drop constraint if exists messages_seq_key;
set local lock_timeout to default;
