import { afterAll, beforeAll, expect, it } from 'vitest';
import { upsertPlayer } from '../../src/auth/index.ts';
import { beginPlayerTurn, releaseTurn } from '../../src/conversations/index.ts';
import { connect, LOCKS, type Sql } from '../../src/db/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// The turn's claim goes out in one round trip: BEGIN, the Player's lock, the statement and COMMIT written together
// (ADR 0072). postgres.js re-sends a prepared statement the server no longer has — behind that COMMIT, so outside
// the transaction. These tests make it do so (the connection's statement deallocated) and check the re-sent claim
// still never runs beside another claim of the same Player.
let db: TestDatabase;
let one: Sql;
beforeAll(async () => {
  db = await createTestDatabase();
  // One connection: the statement prepared by the first turn is the one the next turn re-uses.
  one = connect(db.url, { max: 1 });
});
afterAll(async () => {
  await one?.end();
  await db?.drop();
});

const LIMITS = {
  turnsPerMinute: 1000,
  concurrentStreams: 1000,
  playerDailyTokens: 1e12,
  villageDailyTokens: 1e12,
};
const INSTANCE = 7;

async function setup(name: string) {
  const player = await upsertPlayer(db.sql, `did:plc:claim${name}`, `${name}.test`);
  const [npc] = await db.sql<
    { id: string }[]
  >`insert into npcs (player_id, name) values (${player.id}, 'Ada') returning id`;
  const [c] = await db.sql<
    { id: string }[]
  >`insert into conversations (player_id) values (${player.id}) returning id`;
  await db.sql`insert into conversation_participants values (${c!.id}, ${npc!.id}, 0)`;
  const begin = (text: string) =>
    beginPlayerTurn(one, {
      conversationId: c!.id,
      playerId: player.id,
      instanceId: INSTANCE,
      text,
      limits: LIMITS,
      reply: { npc: { id: npc!.id, name: 'Ada' }, provider: 'fake', model: 'fake-model' },
    });
  return { playerId: player.id, conversationId: c!.id, begin };
}

/** Forgets the connection's prepared claim, as a migration's stale plan would: its next use fails and is re-sent. */
async function forgetClaimStatement() {
  const names = await one<{ name: string }[]>`
    select name from pg_prepared_statements where statement like '%claimed as (%'`;
  expect(names.length).toBeGreaterThan(0);
  for (const { name } of names) await one.unsafe(`deallocate "${name.replaceAll('"', '""')}"`);
}

const playerMessages = (conversationId: string) =>
  db.sql`select text from messages where conversation_id = ${conversationId} and role = 'player' order by seq`;

it('a claim re-sent after its COMMIT (its prepared statement gone) still begins the turn, once', async () => {
  const { conversationId, begin } = await setup('resent');
  await begin('first');
  await releaseTurn(db.sql, conversationId, INSTANCE);
  await forgetClaimStatement();
  const begun = await begin('second');
  expect(begun.playerMessage.parts).toEqual([{ type: 'text', text: 'second' }]);
  expect((await playerMessages(conversationId)).map((r) => r.text)).toEqual(['first', 'second']);
  const [claimed] = await db.sql`select turn_owner from conversations where id = ${conversationId}`;
  expect(claimed!.turn_owner).toBe(INSTANCE);
});

it('a claim re-sent while another transaction holds the Player’s lock claims nothing and answers 409', async () => {
  const { playerId, conversationId, begin } = await setup('guarded');
  await begin('first');
  await releaseTurn(db.sql, conversationId, INSTANCE);
  await forgetClaimStatement();
  const waiting = async (n: number) => {
    for (let i = 0; i < 200; i++) {
      const [row] = await db.sql<{ n: number }[]>`select count(*)::int as n from pg_locks
        where locktype = 'advisory' and classid = ${LOCKS.spending} and not granted`;
      if (row!.n >= n) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`never saw ${n} waiting for the lock`);
  };
  // First holds the lock; the turn queues behind it, then Second behind the turn. When First lets go, the turn's
  // statement fails (deallocated) and its COMMIT ends the transaction — Second takes the lock before the re-sent
  // statement arrives, and holds it while that statement runs.
  let letFirstGo = () => {};
  let letSecondGo = () => {};
  let secondHolds = () => {};
  const secondHolding = new Promise<void>((r) => {
    secondHolds = r;
  });
  const first = db.sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCKS.spending}, hashtext(${playerId}))`;
    await new Promise<void>((r) => {
      letFirstGo = r;
    });
  });
  await new Promise((r) => setTimeout(r, 50));
  const turn = begin('second').then(
    () => 'begun',
    (e: { status?: number; code?: string }) => e.code ?? String(e),
  );
  await waiting(1);
  const second = db.sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCKS.spending}, hashtext(${playerId}))`;
    secondHolds();
    await new Promise<void>((r) => {
      letSecondGo = r;
    });
  });
  await waiting(2);
  letFirstGo();
  await first;
  await secondHolding;
  const outcome = await turn;
  letSecondGo();
  await second;
  expect(outcome).toBe('TURN_IN_PROGRESS');
  expect((await playerMessages(conversationId)).map((r) => r.text)).toEqual(['first']);
});
