-- A reply the Provider cut at its output limit (issue 27): kept, shown as cut, never taken for complete.
alter table messages drop constraint messages_status_check;
alter table messages add constraint messages_status_check
  check (status in ('streaming', 'complete', 'truncated', 'stopped', 'failed', 'interrupted'));

-- The most output tokens one Provider call may write, when the Village wants less than the Model's own limit
-- (which comes from the model registry; null: the Model's limit, or the Provider's default when unknown).
alter table village_settings add column max_output_tokens integer check (max_output_tokens > 0);
