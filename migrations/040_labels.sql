-- Labels from the labelers this instance follows (issue 31, ADR 0060). One row per (labeler, subject, value): a
-- newer label from the same labeler replaces the row, so a negation keeps its row (neg = true) and an older
-- label replayed after it cannot bring the effect back. Only rows that are not negated and not expired count.
create table labels (
  src text not null,
  uri text not null,
  val text not null,
  cid text,
  neg boolean not null default false,
  cts timestamptz not null,
  exp timestamptz,
  received_at timestamptz not null default now(),
  primary key (src, uri, val)
);
-- Read time asks "is this DID or this thread labelled?": by subject.
create index labels_subject on labels (uri) where not neg;

-- Where each labeler's subscribeLabels stream was read to, like index_state's cursor for the firehose.
create table labeler_cursors (
  did text primary key,
  cursor bigint not null,
  updated_at timestamptz not null default now()
);
