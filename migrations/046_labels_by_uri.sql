-- Labels on a thread's turns (ADR 0060): a read asks "did a label on any of this author's turns change?" as a
-- range of subjects (`at://<did>/click.aligned.chat.message/…`), negated rows included (a negation must change
-- the thread's version too). `text_pattern_ops` compares bytes, so a prefix is a range whatever the database's
-- locale, and it serves equality too: it replaces the partial index, which could not see negated rows.
create index labels_by_uri on labels (uri text_pattern_ops);
drop index labels_subject;
