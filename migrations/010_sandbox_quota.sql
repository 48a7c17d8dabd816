-- How many megabytes of files one Conversation's sandbox may hold (a Village setting).
alter table village_settings
  add column sandbox_quota_mb integer not null default 100 check (sandbox_quota_mb between 1 and 10000);
