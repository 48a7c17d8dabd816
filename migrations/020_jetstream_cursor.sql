-- The AppView can follow Jetstream instead of a relay (issue 17). Jetstream's cursor is a time in
-- microseconds, not a relay sequence number, so each source keeps its own: switching sources never resumes
-- one stream at the other's position.
alter table index_state add column jetstream_cursor bigint;
