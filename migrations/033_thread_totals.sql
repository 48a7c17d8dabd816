-- Each thread's size and version kept as its turns are indexed (issue 32): a read asked "has this thread changed,
-- and how big is it?" by counting and summing its turns every time, which made a cached read cost as much as the
-- bare SELECT of its rows. Keyed by (session, author): only the session's author's turns belong to its thread.
-- Kept by statement triggers over the changed rows, so every writer (stream, backfill, delete, purge, eviction)
-- keeps it without knowing of it. `version` is drawn from one sequence on every change to the thread's turns, so
-- it never repeats, even for a thread emptied and written again.
create sequence index_thread_version;

create table index_thread_totals (
  session_uri text not null,
  did text not null,
  turns integer not null,
  bytes bigint not null,
  version bigint not null default nextval('index_thread_version'),
  primary key (session_uri, did)
);

insert into index_thread_totals (session_uri, did, turns, bytes)
select session_uri, did, count(*), coalesce(sum(octet_length(view)), 0) from index_messages group by 1, 2;

-- The changed rows folded in one statement, in key order: two writers lock the totals rows in the same order, so
-- they wait for each other rather than deadlock.
create function index_thread_totals_changed() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    insert into index_thread_totals as t (session_uri, did, turns, bytes)
    select session_uri, did, count(*), sum(octet_length(view)) from new_rows group by 1, 2 order by 1, 2
    on conflict (session_uri, did) do update set turns = t.turns + excluded.turns,
      bytes = t.bytes + excluded.bytes, version = nextval('index_thread_version');
  elsif tg_op = 'UPDATE' then
    insert into index_thread_totals as t (session_uri, did, turns, bytes)
    select session_uri, did, sum(n), sum(b) from (
      select session_uri, did, 1 as n, octet_length(view) as b from new_rows
      union all select session_uri, did, -1, -octet_length(view) from old_rows) c
    group by 1, 2 order by 1, 2
    on conflict (session_uri, did) do update set turns = t.turns + excluded.turns,
      bytes = t.bytes + excluded.bytes, version = nextval('index_thread_version');
    delete from index_thread_totals t using (select distinct session_uri, did from old_rows) d
    where t.session_uri = d.session_uri and t.did = d.did and t.turns <= 0;
  else
    update index_thread_totals t set turns = t.turns - d.n, bytes = t.bytes - d.b,
      version = nextval('index_thread_version')
    from (select session_uri, did, count(*) as n, sum(octet_length(view)) as b from old_rows
      group by 1, 2 order by 1, 2) d
    where t.session_uri = d.session_uri and t.did = d.did;
    delete from index_thread_totals t using (select distinct session_uri, did from old_rows) d
    where t.session_uri = d.session_uri and t.did = d.did and t.turns <= 0;
  end if;
  return null;
end $$;

create trigger index_thread_totals_on_insert after insert on index_messages
  referencing new table as new_rows for each statement execute function index_thread_totals_changed();
create trigger index_thread_totals_on_update after update on index_messages
  referencing old table as old_rows new table as new_rows for each statement
  execute function index_thread_totals_changed();
create trigger index_thread_totals_on_delete after delete on index_messages
  referencing old table as old_rows for each statement execute function index_thread_totals_changed();
