import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AppError } from '../../src/http/index.ts';
import { FairSlots, FairSlotsCore, type FairSlotsPolicy, SlotDeadlineError } from '../../src/slots/index.ts';

const PLAYERS = ['a', 'b', 'c', 'd'];

const policyArb = fc
  .record({
    capacity: fc.integer({ min: 1, max: 6 }),
    perPlayer: fc.integer({ min: 1, max: 6 }),
    // Half the policies keep no reserve, where the order among eligible Players matters most.
    reserveShare: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.99, noNaN: true })),
    queuePerPlayer: fc.integer({ min: 0, max: 4 }),
    // Half the policies bound every line together too.
    queueTotal: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
  })
  .map(
    ({ reserveShare, queueTotal, ...p }): FairSlotsPolicy => ({
      ...p,
      ...(queueTotal === undefined ? {} : { queueTotal }),
      reserve: Math.floor(reserveShare * p.capacity),
    }),
  );

type Op =
  | { kind: 'ask'; player: string }
  | { kind: 'release'; player: string; pick: number }
  | { kind: 'cancel'; pick: number };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('ask' as const), player: fc.constantFrom(...PLAYERS) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      player: fc.constantFrom(...PLAYERS),
      pick: fc.nat(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
);

describe('the fair-slot policy (model-based)', () => {
  it('never passes capacity or a share, leaves no slot idle while someone may take it, serves the fewest-held first, FIFO per Player', () => {
    fc.assert(
      fc.property(policyArb, fc.array(opArb, { maxLength: 120 }), (policy, ops) => {
        const core = new FairSlotsCore<number>(policy);
        // The model: what each Player holds and who waits, in arrival order.
        const held = new Map<string, number>();
        const waiting: { player: string; ticket: number }[] = [];
        const h = (p: string) => held.get(p) ?? 0;
        const total = () => [...held.values()].reduce((a, b) => a + b, 0);
        const mayTake = (p: string) => {
          const free = policy.capacity - total();
          return free > 0 && h(p) < policy.perPlayer && (h(p) === 0 || free - 1 >= policy.reserve);
        };
        let next = 0;
        for (const op of ops) {
          if (op.kind === 'ask') {
            const ticket = next++;
            const bumped: { player: string; ticket: number }[] = [];
            const asked = core.ask(op.player, ticket, (player, t) => bumped.push({ player, ticket: t }));
            const mine = waiting.filter((w) => w.player === op.player).length;
            const most = Math.max(0, ...PLAYERS.map((p) => waiting.filter((w) => w.player === p).length));
            if (mayTake(op.player)) {
              expect(asked).toBe('granted');
              held.set(op.player, h(op.player) + 1);
            } else if (mine >= policy.queuePerPlayer) expect(asked).toBe('full');
            else if (
              policy.queueTotal !== undefined &&
              waiting.length >= policy.queueTotal &&
              most < mine + 2
            )
              expect(asked).toBe('busy');
            else if (policy.queueTotal !== undefined && waiting.length >= policy.queueTotal) {
              // A full line makes room: the newest request of a Player with the most waiting is bumped out.
              expect(asked).toBe('queued');
              expect(bumped).toHaveLength(1);
              const { player, ticket: out } = bumped[0]!;
              expect(waiting.filter((w) => w.player === player).length).toBe(most);
              expect(out).toBe(waiting.filter((w) => w.player === player).at(-1)!.ticket);
              waiting.splice(
                waiting.findIndex((w) => w.ticket === out),
                1,
              );
              waiting.push({ player: op.player, ticket });
            } else {
              expect(asked).toBe('queued');
              expect(bumped).toEqual([]);
              waiting.push({ player: op.player, ticket });
            }
          } else if (op.kind === 'release') {
            const holders = [...held.keys()];
            if (!holders.length) continue;
            const player = holders[op.pick % holders.length]!;
            held.set(player, h(player) - 1);
            if (!h(player)) held.delete(player);
            for (const g of core.release(player)) {
              // The grant goes to a waiting Player who may take a slot and holds no more than any other such.
              expect(mayTake(g.player)).toBe(true);
              const rivals = waiting.filter((w) => w.player !== g.player && mayTake(w.player));
              for (const r of rivals) expect(h(g.player)).toBeLessThanOrEqual(h(r.player));
              // Within a Player, its oldest request first.
              const oldest = waiting.find((w) => w.player === g.player)!;
              expect(g.ticket).toBe(oldest.ticket);
              waiting.splice(waiting.indexOf(oldest), 1);
              held.set(g.player, h(g.player) + 1);
            }
          } else {
            if (!waiting.length) continue;
            const w = waiting[op.pick % waiting.length]!;
            expect(core.cancel(w.player, w.ticket)).toBe(true);
            waiting.splice(waiting.indexOf(w), 1);
            expect(core.cancel(w.player, w.ticket)).toBe(false);
          }
          // Never over capacity, never over a Player's cap; the core agrees with the model.
          expect(core.total).toBe(total());
          expect(total()).toBeLessThanOrEqual(policy.capacity);
          for (const p of PLAYERS) {
            expect(core.heldBy(p)).toBe(h(p));
            expect(h(p)).toBeLessThanOrEqual(policy.perPlayer);
            expect(core.waitingBy(p)).toBe(waiting.filter((w) => w.player === p).length);
          }
          // Nobody waits who could take a slot; a Player holding none waits only when every slot is taken.
          for (const w of waiting) {
            expect(mayTake(w.player)).toBe(false);
            if (h(w.player) === 0) expect(total()).toBe(policy.capacity);
          }
          // Past its first slot, a Player takes one only while the reserve stays free for newcomers.
          const over = PLAYERS.filter((p) => h(p) > 1);
          if (over.length && waiting.some((w) => h(w.player) === 0)) expect(total()).toBe(policy.capacity);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('a lone Player uses all but the reserve; a second Player then gets the reserved slot at once', () => {
    const core = new FairSlotsCore<number>({ capacity: 4, perPlayer: 4, reserve: 1, queuePerPlayer: 9 });
    expect([1, 2, 3, 4].map((t) => core.ask('a', t))).toEqual(['granted', 'granted', 'granted', 'queued']);
    expect(core.ask('b', 5)).toBe('granted');
    expect(core.ask('b', 6)).toBe('queued');
  });

  it('a freed slot goes to the waiting Player holding fewest, though another asked first', () => {
    const core = new FairSlotsCore<number>({ capacity: 3, perPlayer: 3, reserve: 0, queuePerPlayer: 9 });
    expect([1, 2, 3, 4].map((t) => core.ask('a', t))).toEqual(['granted', 'granted', 'granted', 'queued']);
    expect(core.ask('b', 5)).toBe('queued');
    expect(core.release('a')).toEqual([{ player: 'b', ticket: 5 }]);
    expect(core.release('b')).toEqual([{ player: 'a', ticket: 4 }]);
  });
});

describe('fair slots in time', () => {
  afterEach(() => vi.useRealTimers());

  const options = {
    capacity: 2,
    perPlayer: 2,
    reserve: 0,
    queuePerPlayer: 3,
    waitMs: 1000,
    holdMs: 5000,
    messages: { queueFull: 'You have enough waiting.', busy: 'Busy: try again.' },
  };

  it('every waiter is served or refused by its deadline (503 BUSY, Retry-After), and a full queue is refused at once (429)', async () => {
    vi.useFakeTimers();
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            player: fc.constantFrom(...PLAYERS),
            at: fc.integer({ min: 0, max: 3000 }),
            work: fc.integer({ min: 1, max: 3000 }),
          }),
          { maxLength: 25 },
        ),
        async (arrivals) => {
          const slots = new FairSlots(options);
          const outcomes: { asked: number; settled?: number; result?: 'slot' | number }[] = [];
          const start = Date.now();
          for (const a of [...arrivals].sort((x, y) => x.at - y.at)) {
            await vi.advanceTimersByTimeAsync(Math.max(0, start + a.at - Date.now()));
            const o: (typeof outcomes)[number] = { asked: Date.now() };
            outcomes.push(o);
            slots.acquire(a.player).then(
              (slot) => {
                o.settled = Date.now();
                o.result = 'slot';
                setTimeout(slot.release, a.work);
              },
              (e: AppError) => {
                o.settled = Date.now();
                o.result = e.status;
                expect(e.code).toBe('BUSY');
                expect(e.retryAfter).toBeGreaterThan(0);
              },
            );
            await vi.advanceTimersByTimeAsync(0);
            expect(slots.held).toBeLessThanOrEqual(options.capacity);
          }
          await vi.advanceTimersByTimeAsync(options.waitMs + 10_000);
          for (const o of outcomes) {
            expect(o.settled).toBeDefined();
            expect(o.settled! - o.asked).toBeLessThanOrEqual(options.waitMs);
            if (o.result === 429) expect(o.settled).toBe(o.asked);
          }
          expect(slots.held).toBe(0);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a slot held past its deadline aborts its signal and goes to the next', async () => {
    vi.useFakeTimers();
    const slots = new FairSlots({ ...options, capacity: 1, waitMs: 10_000 });
    const first = await slots.acquire('a');
    const second = slots.acquire('b');
    await vi.advanceTimersByTimeAsync(options.holdMs - 1);
    expect(first.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(first.signal.reason).toBeInstanceOf(SlotDeadlineError);
    expect(slots.heldBy('a')).toBe(0);
    const slot = await second;
    expect(slots.heldBy('b')).toBe(1);
    first.release(); // late, and harmless: b keeps its slot
    expect(slots.heldBy('b')).toBe(1);
    slot.release();
    expect(slots.held).toBe(0);
  });

  it('past every line together, a request is refused at once as busy (503); a full line, as the pool says', async () => {
    const slots = new FairSlots({ ...options, capacity: 1, queueTotal: 2, queueFullStatus: 503 });
    const first = await slots.acquire('a');
    const waiting = [slots.acquire('b'), slots.acquire('c')];
    await expect(slots.acquire('d')).rejects.toMatchObject({
      code: 'BUSY',
      status: 503,
      message: options.messages.busy,
    });
    // Another of b's: its own line (three) is not full, every line together is.
    await expect(slots.acquire('b')).rejects.toMatchObject({ status: 503, message: options.messages.busy });
    first.release();
    (await waiting[0]!).release();
    (await waiting[1]!).release();
    // A Player's full line is 503 here, not 429: the key is not the caller.
    const own = new FairSlots({ ...options, capacity: 1, queuePerPlayer: 0, queueFullStatus: 503 });
    const held = await own.acquire('a');
    await expect(own.acquire('a')).rejects.toMatchObject({
      status: 503,
      message: options.messages.queueFull,
    });
    held.release();
    expect(slots.held + own.held).toBe(0);
  });

  it('a full line makes room for a Player with fewer waiting: the newest of the longest line is refused as busy', async () => {
    const slots = new FairSlots({ ...options, capacity: 1, queueTotal: 3 });
    const first = await slots.acquire('a');
    const settled: string[] = [];
    const track = (name: string, p: Promise<{ release(): void }>) =>
      p.then(
        (slot) => {
          settled.push(`${name} granted`);
          slot.release();
        },
        (e: AppError) => settled.push(`${name} ${e.status}`),
      );
    const b = [1, 2, 3].map((i) => track(`b${i}`, slots.acquire('b')));
    // The line is full of b's; c holds and waits for nothing: b's newest makes room for it.
    const c = track('c', slots.acquire('c'));
    await Promise.resolve();
    await Promise.resolve();
    expect(settled).toEqual(['b3 503']);
    expect(slots.waitingBy('b')).toBe(2);
    expect(slots.waitingBy('c')).toBe(1);
    // d waits for nothing either, and b still has two more than it: b's newest again.
    const d = track('d', slots.acquire('d'));
    await Promise.resolve();
    await Promise.resolve();
    expect(settled).toEqual(['b3 503', 'b2 503']);
    // b, c and d wait one each: nobody has two more than another, and e is refused at once.
    await expect(slots.acquire('e')).rejects.toMatchObject({ status: 503, message: options.messages.busy });
    first.release();
    await Promise.all([...b, c, d]);
    expect(settled.slice(2)).toEqual(['b1 granted', 'c granted', 'd granted']);
  });

  it('a caller that goes away stops waiting and takes no slot', async () => {
    const slots = new FairSlots({ ...options, capacity: 1 });
    const first = await slots.acquire('a');
    const gone = new AbortController();
    const waiting = slots.acquire('b', { signal: gone.signal });
    gone.abort(new Error('went away'));
    await expect(waiting).rejects.toThrow('went away');
    first.release();
    expect(slots.held).toBe(0);
  });
});
