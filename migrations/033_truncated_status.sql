-- A reply the Provider cut at its output limit (issue 27): kept, shown as cut, never taken for complete.
alter table messages drop constraint messages_status_check;
alter table messages add constraint messages_status_check
  check (status in ('streaming', 'complete', 'truncated', 'stopped', 'failed', 'interrupted'));
