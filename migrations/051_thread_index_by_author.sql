-- A thread is its session's turns written by the session's author: (session_uri, did), read in rkey order. The
-- index had (session_uri, rkey) beside one on did alone, and a thread read combined the two (a bitmap over every
-- turn the author ever indexed, then a sort). Keyed as the read asks, it is one ordered index scan: a cold
-- 1,000-turn read's statement went from ~8.4 to ~4.4 ms (ADR 0070's floor). Queries by session alone still
-- use its leading column. Replaced, not added: one index more would cost every indexed record a write.
drop index index_messages_thread;
create index index_messages_thread on index_messages (session_uri, did, rkey);
