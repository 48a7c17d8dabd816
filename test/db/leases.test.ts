import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeFlags } from '../../scripts/node-flags.mjs';
import { connect, type Lease, LeaseBusyError, Leases, type Sql } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
let small: Sql;
const made: Leases[] = [];
const leasesOn = (sql: Sql, maxPollMs?: number) => {
  const l = new Leases(sql, maxPollMs);
  made.push(l);
  return l;
};
beforeAll(async () => {
  db = await createTestDatabase();
  // Two connections: with a connection per waiter (an advisory lock), two waiters would take them all.
  small = connect(db.url, { max: 2 });
});
afterAll(async () => {
  await Promise.all(made.map((l) => l.close()));
  await small?.end({ timeout: 5 });
  await db?.drop();
});

const opened = () => {
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  return { gate, open };
};
const row = async (name: string) =>
  (await db.sql<{ holder: string }[]>`select holder from leases where name = ${name}`)[0];
/** Backends of the test database waiting on a lock of any kind, or sitting in an advisory-lock call. */
const lockWaiters = async () =>
  (
    await db.sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid()
        and (wait_event_type = 'Lock' or query ilike '%pg_advisory%')`
  )[0]!.n;

describe('leases', () => {
  it('ten waiters in five processes hold no connection while the holder works; another name is had at once', async () => {
    const held = opened();
    const holder = leasesOn(small);
    let inside = 0;
    let most = 0;
    let ran = 0;
    const work = async () => {
      inside++;
      most = Math.max(most, inside);
      await new Promise((r) => setTimeout(r, 20));
      inside--;
      ran++;
    };
    let holding!: () => void;
    const isHeld = new Promise<void>((r) => {
      holding = r;
    });
    const first = holder.hold('pub:1', { ttlMs: 10_000, waitMs: 10_000 }, async () => {
      holding();
      inside++;
      most = Math.max(most, inside);
      await held.gate;
      inside--;
      ran++;
    });
    await isHeld;
    // Five "processes" (each its own Leases: its own in-process line), two waiters each.
    const processes = [0, 1, 2, 3, 4].map(() => leasesOn(small, 100));
    const waiters = processes.flatMap((p) =>
      [0, 1].map(() => p.hold('pub:1', { ttlMs: 10_000, waitMs: 20_000 }, work)),
    );
    await new Promise((r) => setTimeout(r, 500));
    // The pool of two still answers at once, nothing waits inside PostgreSQL, and another lease is free.
    expect(await small`select 1 as one`).toEqual([{ one: 1 }]);
    expect(await lockWaiters()).toBe(0);
    expect(await leasesOn(small).hold('pub:2', { ttlMs: 10_000, waitMs: 1 }, async () => 'other')).toBe(
      'other',
    );
    expect(ran).toBe(0);
    held.open();
    await Promise.all([first, ...waiters]);
    expect(ran).toBe(11);
    expect(most).toBe(1);
    expect(await row('pub:1')).toBeUndefined();
  });

  it('a wait past its deadline is LeaseBusyError, in line in this process or for the row', async () => {
    const held = opened();
    const a = leasesOn(small);
    let holding!: () => void;
    const isHeld = new Promise<void>((r) => {
      holding = r;
    });
    const first = a.hold('busy', { ttlMs: 10_000, waitMs: 1000 }, async () => {
      holding();
      await held.gate;
    });
    await isHeld;
    const terms = { ttlMs: 10_000, waitMs: 300 };
    const inLine = a.hold('busy', terms, async () => 'no');
    const forRow = leasesOn(small).hold('busy', terms, async () => 'no');
    // Both awaited together: the one that gives up first is never a rejection nobody is listening to yet.
    await Promise.all([
      expect(inLine).rejects.toBeInstanceOf(LeaseBusyError),
      expect(forRow).rejects.toBeInstanceOf(LeaseBusyError),
    ]);
    held.open();
    await first;
    // Free again: had at once.
    expect(await a.hold('busy', terms, async () => 'yes')).toBe('yes');
  });

  it('is renewed while its holder works past its term, so nobody else takes it meanwhile', async () => {
    const a = leasesOn(small);
    const b = leasesOn(small, 50);
    let bGot = 0;
    let aDone = 0;
    const ttlMs = 600;
    let holding!: () => void;
    const isHeld = new Promise<void>((r) => {
      holding = r;
    });
    const first = a.hold('long', { ttlMs, waitMs: 1000 }, async (lease) => {
      holding();
      // Three whole terms of work.
      await new Promise((r) => setTimeout(r, 3 * ttlMs));
      expect(lease.signal.aborted).toBe(false);
      aDone = Date.now();
    });
    await isHeld;
    const second = b.hold('long', { ttlMs, waitMs: 10_000 }, async () => {
      bGot = Date.now();
    });
    await Promise.all([first, second]);
    expect(bGot).toBeGreaterThanOrEqual(aDone);
  });

  it('once taken over, the old holder is told, its fence is down, and its release leaves the new holder be', async () => {
    const a = leasesOn(small);
    let lease!: Lease;
    let holding!: () => void;
    const isHeld = new Promise<void>((r) => {
      holding = r;
    });
    const lost = opened();
    const first = a.hold('taken', { ttlMs: 900, waitMs: 1000 }, async (l) => {
      lease = l;
      holding();
      l.signal.addEventListener('abort', () => lost.open());
      await lost.gate;
    });
    await isHeld;
    expect(lease.heldFor(500)).toBe(true);
    expect(lease.heldFor(5_000)).toBe(false);
    // As if this holder had stalled past its term and another had taken the lease over.
    const other = '00000000-0000-4000-8000-000000000001';
    await db.sql`update leases set holder = ${other}, expires_at = now() + interval '1 minute' where name = 'taken'`;
    await first;
    expect(lease.signal.aborted).toBe(true);
    expect(lease.heldFor(0)).toBe(false);
    expect((await row('taken'))?.holder).toBe(other);
  });

  it('a holder killed mid-work leaves a lease that expires and is taken over', async () => {
    const child = spawn(
      process.execPath,
      [...nodeFlags(), '--import', 'tsx', path.join(import.meta.dirname, '../support/leaseHolder.ts')],
      {
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: db.url, LEASE: 'killed', TTL_MS: '1500' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    expect((await lines.next()).value).toBe('held');
    const theirs = (await row('killed'))!.holder;
    // Held by a live process: not to be had.
    const a = leasesOn(small, 100);
    await expect(a.hold('killed', { ttlMs: 5000, waitMs: 300 }, async () => 'no')).rejects.toBeInstanceOf(
      LeaseBusyError,
    );
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
    // Its row is still there (nobody released it), and it is had once it expires.
    expect((await row('killed'))?.holder).toBe(theirs);
    const mine = await a.hold(
      'killed',
      { ttlMs: 5000, waitMs: 10_000 },
      async () => (await row('killed'))!.holder,
    );
    expect(mine).not.toBe(theirs);
  }, 30_000);
});
