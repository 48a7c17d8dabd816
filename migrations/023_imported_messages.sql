-- Messages that came in an imported file (issue 18) keep their usage, as the file had it, but were not paid for
-- here: Usage and the usage kept when replies are deleted leave them out.
alter table messages add column imported boolean not null default false;
