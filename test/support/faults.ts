import type { Sql } from '../../src/db/index.ts';

/**
 * A real storage failure for the index: while switched on, every write of a turn to `index_messages` fails in
 * PostgreSQL itself (a trigger), and each failure is counted in a sequence, which survives the rollback.
 */
export async function indexFailureSwitch(sql: Sql) {
  await sql.unsafe(`
    create table if not exists fail_switch (on_ boolean);
    create sequence if not exists fail_fired;
    create or replace function fail_when_switched() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from fail_switch) then
        perform nextval('fail_fired');
        -- disk_full: the database cannot store for now (as opposed to refusing what a record holds).
        raise exception 'injected storage failure' using errcode = '53100';
      end if;
      return new;
    end $$;
    drop trigger if exists fail_index on index_messages;
    create trigger fail_index before insert or update on index_messages
      for each row execute function fail_when_switched();`);
  return {
    on: async () => {
      await sql`insert into fail_switch values (true)`;
    },
    off: async () => {
      await sql`delete from fail_switch`;
    },
    /** How many writes failed so far. */
    fired: async () => Number((await sql`select last_value from fail_fired`)[0]!.last_value),
    remove: async () => {
      await sql.unsafe('drop trigger if exists fail_index on index_messages');
    },
  };
}
