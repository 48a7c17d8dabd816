import fc from 'fast-check';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { LARGE_THREAD_BYTES } from '../../src/appview/fragments.ts';
import { LARGE_WAIT_MS } from '../../src/appview/places.ts';
import { getThread, getThreadBody } from '../../src/appview/read.ts';
import {
  LARGE_PARSES_AT_ONCE,
  LARGE_PARSES_WAITING,
  PARSE_HOLD_MS,
  parsesNow,
  parsesWaitingBy,
  parseThread,
} from '../../src/appview/threadParse.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { indexThread, noNetwork } from '../support/records.ts';

// A thread's answer (up to 16 MiB) is parsed for the reader a turn at a time, the event loop turning between
// slices: one JSON.parse of the whole held every other request on the instance for as long.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

let n = 0;
const author = () => ({
  did: `did:plc:parse${(++n).toString().padStart(19, '0')}`,
  handle: `parse${n}.test`,
});

// Text as the network may send it: quotes, backslashes, control characters, astral characters (two UTF-16
// units, four UTF-8 bytes) — what makes a turn's bytes and its characters differ.
const text = fc.string({
  unit: fc.constantFrom('a', ' ', '"', '\\', '\n', '\u0001', 'é', '€', '😀', '█', '\u2028'),
});

it('each turn read by its bounds is the turn the whole answer holds, whatever its text', async () => {
  await fc.assert(
    fc.asyncProperty(
      text,
      fc.array(fc.record({ role: fc.constantFrom('user', 'agent'), text }), { minLength: 0, maxLength: 12 }),
      async (title, turns) => {
        const { uri } = await indexThread(db.sql, author(), title, turns);
        const answer = (await getThreadBody(db.sql, noNetwork, uri))!;
        const whole = JSON.parse(answer.body.toString()) as { session: unknown; messages: unknown[] };
        expect(answer.bounds.length).toBe(2 * whole.messages.length + 2);
        const piece = (i: number) =>
          JSON.parse(answer.body.toString('utf8', answer.bounds[2 * i], answer.bounds[2 * i + 1]));
        expect(piece(0)).toEqual(whole.session);
        for (const [i, m] of whole.messages.entries()) expect(piece(i + 1)).toEqual(m);
        expect(await parseThread(author().did, answer.body, answer.bounds)).toEqual(whole);
      },
    ),
    { numRuns: 25 },
  );
});

it('a large thread is parsed in slices, the event loop turning between them', async () => {
  const turns = Array.from({ length: 40 }, (_, i) => ({ role: 'user', text: `${i}`.padEnd(14_000, '█') }));
  const { uri } = await indexThread(db.sql, author(), 'Large', turns);
  const answer = (await getThreadBody(db.sql, noNetwork, uri))!;
  let turned = 0;
  const parsed = await parseThread<unknown, { record: object }>(author().did, answer.body, answer.bounds, {
    pause: async () => turned++,
    sliceBytes: 256 * 1024,
  });
  expect(parsed).toEqual(JSON.parse(answer.body.toString()));
  // Shared by every reader of a kept thread: nothing in it can be changed.
  expect(Object.isFrozen(parsed.messages)).toBe(true);
  expect(Object.isFrozen(parsed.messages[39]!.record)).toBe(true);
  // 40 turns of some 42 KB each (█ is three bytes, a grapheme each: 14,000 is within the lexicon's 15,000), 1.7 MB:
  // a turn of the loop after every seventh turn.
  expect(turned).toBeGreaterThanOrEqual(5);
});

/** A thread's answer past LARGE_THREAD_BYTES, with its bounds: a session and two turns. */
function large(): { body: Buffer; bounds: Uint32Array } {
  const session = JSON.stringify({ uri: 'at://x' });
  const turns = [JSON.stringify({ text: 'a'.repeat(LARGE_THREAD_BYTES) }), JSON.stringify({ text: 'b' })];
  const text = `{"session":${session},"messages":[${turns.join(',')}]}`;
  const bounds: number[] = [];
  let at = 0;
  for (const piece of [session, ...turns]) {
    at = text.indexOf(piece, at);
    bounds.push(at, at + piece.length);
    at += piece.length;
  }
  return { body: Buffer.from(text), bounds: Uint32Array.from(bounds) };
}
const LARGE = large();
const held = () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  return { pause: () => gate, release };
};

/** Large parses that hold every place until `release`, one author's each (each pauses after its first piece). */
async function holdEveryParse() {
  const { pause, release } = held();
  const holders = Array.from({ length: LARGE_PARSES_AT_ONCE }, () =>
    parseThread(author().did, LARGE.body, LARGE.bounds, { pause, sliceBytes: 1 }),
  );
  await expect.poll(() => parsesNow()).toBe(LARGE_PARSES_AT_ONCE);
  return async () => {
    release();
    await Promise.all(holders);
  };
}

it('at most two large parses run at once: the others wait their turn, one author’s a parse at a time; a small thread waits for none', async () => {
  const release = await holdEveryParse();
  const writer = author();
  const waiting = Array.from({ length: 3 }, () => parseThread(writer.did, LARGE.body, LARGE.bounds));
  await expect.poll(() => parsesWaitingBy(writer.did)).toBe(3);
  expect(parsesNow()).toBe(LARGE_PARSES_AT_ONCE);
  // A thread of a megabyte or less is parsed at once, though every place is taken.
  const { uri } = await indexThread(db.sql, writer, 'Small', [{ role: 'user', text: 'b' }]);
  const small = (await getThreadBody(db.sql, noNetwork, uri))!;
  expect((await parseThread(writer.did, small.body, small.bounds)).messages).toHaveLength(1);
  await release();
  for (const parsed of await Promise.all(waiting)) expect(parsed).toEqual(JSON.parse(LARGE.body.toString()));
  expect(parsesNow()).toBe(0);
  expect(parsesWaitingBy(writer.did)).toBe(0);
});

it("an author whose threads wait for a parse holds one place: another author's thread is parsed at once", async () => {
  const many = author();
  const { pause, release } = held();
  const theirs = Array.from({ length: 4 }, () =>
    parseThread(many.did, LARGE.body, LARGE.bounds, { pause, sliceBytes: 1 }),
  );
  await expect.poll(() => parsesWaitingBy(many.did)).toBe(3);
  expect(parsesNow()).toBe(1);
  // The other place is free for anyone else's, though the first author's three came before.
  expect((await parseThread(author().did, LARGE.body, LARGE.bounds)).messages).toHaveLength(2);
  release();
  await Promise.all(theirs);
});

it('a parse that waits too long is refused as busy (503), as is one past every line together; no place is left taken', async () => {
  const release = await holdEveryParse();
  // Every line together: LARGE_PARSES_WAITING parses of as many authors wait, and the next is refused at once.
  const lines = Array.from({ length: LARGE_PARSES_WAITING }, () => author().did);
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  try {
    const waiting = lines.map((did) => parseThread(did, LARGE.body, LARGE.bounds));
    const refused = waiting.map((w) => expect(w).rejects.toMatchObject({ code: 'BUSY', status: 503 }));
    await expect
      .poll(() => lines.filter((did) => parsesWaitingBy(did) === 1).length)
      .toBe(LARGE_PARSES_WAITING);
    await expect(parseThread(author().did, LARGE.body, LARGE.bounds)).rejects.toMatchObject({
      code: 'BUSY',
      status: 503,
      retryAfter: 5,
    });
    // The waiting ones' time runs out.
    vi.advanceTimersByTime(LARGE_WAIT_MS);
    await Promise.all(refused);
    expect(lines.filter((did) => parsesWaitingBy(did) > 0)).toEqual([]);
  } finally {
    vi.useRealTimers();
  }
  await release();
  expect(parsesNow()).toBe(0);
});

it("a parse that outlasts its place's time gives the place back and stops at its next slice, as busy", async () => {
  const { pause, release } = held();
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  try {
    const slow = parseThread(author().did, LARGE.body, LARGE.bounds, { pause, sliceBytes: 1 });
    const stopped = expect(slow).rejects.toMatchObject({ code: 'BUSY', status: 503 });
    await expect.poll(() => parsesNow()).toBe(1);
    vi.advanceTimersByTime(PARSE_HOLD_MS);
    expect(parsesNow()).toBe(0);
    release();
    await stopped;
  } finally {
    vi.useRealTimers();
  }
});

it('readers of one thread while it is being parsed wait for that one parse and share it', async () => {
  // 40 turns of some 42 KB each: 1.7 MB, a large thread.
  const turns = Array.from({ length: 40 }, (_, i) => ({ role: 'user', text: `${i}`.padEnd(14_000, '█') }));
  const writer = author();
  const { uri } = await indexThread(db.sql, writer, 'Shared', turns);
  // Kept unparsed, as getThread's XRPC route leaves it; its parse waits behind two others, and four more readers
  // come meanwhile.
  await getThreadBody(db.sql, noNetwork, uri);
  const release = await holdEveryParse();
  const readers = Array.from({ length: 5 }, () => getThread(db.sql, noNetwork, uri));
  await expect.poll(() => parsesWaitingBy(writer.did)).toBe(1);
  // Every reader has its answer by now (each asked the version), and only one parse waits.
  await new Promise((r) => setTimeout(r, 100));
  expect(parsesWaitingBy(writer.did)).toBe(1);
  await release();
  const [first, ...others] = await Promise.all(readers);
  expect(first!.messages).toHaveLength(40);
  for (const other of others) expect(other).toBe(first);
});
