import { afterAll, beforeAll, expect, it } from 'vitest';
import { LIVE_INSTANCES, LOCKS } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

it('every advisory-lock class is its own, and no other lock looks like a live server', async () => {
  const classes = Object.values(LOCKS);
  expect(new Set(classes).size).toBe(classes.length);
  // Every two-key lock the server takes, held at once: none may count as a live instance.
  await db.sql.begin(async (tx) => {
    for (const [name, cls] of Object.entries(LOCKS)) {
      if (name === 'instance') continue;
      await tx`select pg_advisory_xact_lock(${cls}, 424242)`;
    }
    const live = await tx.unsafe(LIVE_INSTANCES);
    expect((live as unknown as { objid: number }[]).map((r) => r.objid)).not.toContain(424242);
  });
  // The control: an instance's own lock does count.
  await db.sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCKS.instance}, 424242)`;
    const live = await tx.unsafe(LIVE_INSTANCES);
    expect((live as unknown as { objid: number }[]).map((r) => r.objid)).toContain(424242);
  });
});

// pg_locks shows the whole cluster's locks; advisory locks are each database's own (ADR 0102).
it("another database's server holding the same id does not count as live here", async () => {
  const other = await createTestDatabase({ migrate: false });
  const held = await other.sql.reserve();
  try {
    await held`select pg_advisory_lock(${LOCKS.instance}, 434343)`;
    const live = (await db.sql.unsafe(LIVE_INSTANCES)) as unknown as { objid: number }[];
    expect(live.map((r) => r.objid)).not.toContain(434343);
    const there = (await other.sql.unsafe(LIVE_INSTANCES)) as unknown as { objid: number }[];
    expect(there.map((r) => r.objid)).toContain(434343);
  } finally {
    held.release();
    await other.drop();
  }
});
