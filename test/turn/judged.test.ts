import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metrics } from '../../src/metrics/index.ts';
import type { FirstReads } from '../../src/turn/admit.ts';
import { JudgedReads } from '../../src/turn/judged.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { messages, setupConversation } from '../support/turns.ts';

// ADR 0093: a Conversation's next turn is judged from its last turn's first reads, and its claim checks them in
// the same statement. Whatever changed since, in this process or another (written here straight to the database,
// as another instance would), the turn is judged on the reads as they are now.
let app: TestApp;
let statements: string[] | undefined;
beforeAll(async () => {
  app = await startTestApp({}, {}, { onQuery: (q) => statements?.push(q) });
});
afterAll(() => app?.close());

const judgments = async () => {
  const values = (await metrics.turnJudgments.get()).values;
  const of = (reads: string) => values.find((v) => v.labels.reads === reads)?.value ?? 0;
  return { kept: of('kept'), stale: of('stale'), read: of('read') };
};

/** One turn; what it sent to PostgreSQL, its frames, the Provider's request and how it was judged. */
async function turn(cookie: string, conversationId: string, text = 'Go on.') {
  app.fake.enqueue(textScript('Yes.', { prompt_tokens: 3, completion_tokens: 1 }));
  const before = await judgments();
  const asked = app.fake.requests.length;
  statements = [];
  const res = await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text } });
  const frames = res.status === 200 ? await collectFrames(res) : [];
  const sent = statements;
  statements = undefined;
  const after = await judgments();
  return {
    res,
    frames,
    sent,
    request:
      app.fake.requests.length > asked ? (app.fake.requests.at(-1)!.body as { model: string }) : undefined,
    judged: {
      kept: after.kept - before.kept,
      stale: after.stale - before.stale,
      read: after.read - before.read,
    },
  };
}

const readsFirst = (s: string) => /as fingerprint/.test(s);
const claims = (s: string) => /insert into messages/.test(s) && /'streaming'/.test(s);

describe('a turn judged from the reads its Conversation’s last turn made', () => {
  it('the second turn reads nothing before its claim, which checks the reads in the same statement', async () => {
    const { cookie } = await app.signIn();
    const { conversationId } = await setupConversation(app, cookie);
    const first = await turn(cookie, conversationId);
    expect(first.judged).toEqual({ kept: 0, stale: 0, read: 1 });
    expect(first.sent.filter(readsFirst)).toHaveLength(1);

    const second = await turn(cookie, conversationId);
    expect(second.judged).toEqual({ kept: 1, stale: 0, read: 0 });
    expect(second.frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
    const claim = second.sent.findIndex(claims);
    expect(claim).toBeGreaterThanOrEqual(0);
    // Before the claim: only its transaction and the Player's lock.
    expect(
      second.sent.slice(0, claim).filter((s) => !/^(begin|select pg_advisory_xact_lock)/.test(s)),
    ).toEqual([]);
    expect(second.sent[claim]).toMatch(/judged as materialized/);
    expect(second.sent.filter(readsFirst)).toEqual([]);
    const stored = await messages(app, cookie, conversationId);
    expect(stored.map((m) => m.role)).toEqual(['player', 'npc', 'player', 'npc']);
  });

  it('an NPC changed since (by another instance) answers with its new Model; the turn was read again', async () => {
    const { cookie } = await app.signIn();
    const { conversationId, npcIds } = await setupConversation(app, cookie, [
      { name: 'Ada', provider: 'fake', model: 'first-model' },
    ]);
    expect((await turn(cookie, conversationId)).request?.model).toBe('first-model');
    await app.db.sql`update npcs set model = 'second-model' where id = ${npcIds[0]!}`;
    const changed = await turn(cookie, conversationId);
    expect(changed.judged).toEqual({ kept: 0, stale: 1, read: 0 });
    expect(changed.request?.model).toBe('second-model');
    expect(changed.frames[0]).toMatchObject({ type: 'start', model: 'second-model' });
    // Nothing was written by the claim that found the reads changed: one Message, one reply.
    const stored = await messages(app, cookie, conversationId);
    expect(stored.map((m) => [m.role, m.model ?? null])).toEqual([
      ['player', null],
      ['npc', 'first-model'],
      ['player', null],
      ['npc', 'second-model'],
    ]);
    // And the reads as they are now are the ones kept for the turn after.
    expect((await turn(cookie, conversationId)).judged).toEqual({ kept: 1, stale: 0, read: 0 });
  });

  it('a session signed out, or a Player blocked, since the last turn is refused as before', async () => {
    const player = await app.signIn();
    const { conversationId } = await setupConversation(app, player.cookie);
    await turn(player.cookie, conversationId);
    await app.db.sql`insert into player_blocks (player_id, reason, created_by)
      values (${player.playerId}, 'spam', 'admin')`;
    const blocked = await turn(player.cookie, conversationId);
    expect(blocked.res.status).toBe(403);
    expect(((await blocked.res.json()) as { error: { code: string } }).error.code).toBe('PLAYER_BLOCKED');
    await app.db.sql`update player_blocks set lifted_at = now(), lifted_by = 'admin', lift_reason = 'ok'
      where player_id = ${player.playerId}`;
    expect((await turn(player.cookie, conversationId)).res.status).toBe(200);

    const hash = createHash('sha256')
      .update(player.cookie.replace(/^av_session=/, ''))
      .digest();
    await app.db.sql`delete from sessions where token_hash = ${hash}`;
    const signedOut = await turn(player.cookie, conversationId);
    expect(signedOut.res.status).toBe(401);
    expect(signedOut.judged.stale).toBe(1);
    expect((await messages(app, (await app.signIn(player.did)).cookie, conversationId)).length).toBe(4);
  });

  it('a Village limit lowered since is judged on the reads as they are now', async () => {
    const { cookie } = await app.signIn();
    const { conversationId } = await setupConversation(app, cookie);
    await turn(cookie, conversationId);
    const [row] = await app.db.sql<{ max: number }[]>`select max_message_chars as max from village_settings`;
    const max = row!.max;
    try {
      await app.db.sql`update village_settings set max_message_chars = 5`;
      const long = await turn(cookie, conversationId, 'Longer than five.');
      expect(long.res.status).toBe(400);
      expect(((await long.res.json()) as { error: { code: string } }).error.code).toBe('MESSAGE_TOO_LONG');
      // The claim that found the reads changed wrote nothing: the refused Message is not stored.
      expect((await messages(app, cookie, conversationId)).length).toBe(2);
    } finally {
      await app.db.sql`update village_settings set max_message_chars = ${max}`;
    }
  });

  it('a second device reads for itself: its session has reads of its own', async () => {
    const first = await app.signIn();
    const { conversationId } = await setupConversation(app, first.cookie);
    await turn(first.cookie, conversationId);
    const second = await app.signIn(first.did);
    expect((await turn(second.cookie, conversationId)).judged).toEqual({ kept: 0, stale: 0, read: 1 });
    expect((await turn(first.cookie, conversationId)).judged).toEqual({ kept: 1, stale: 0, read: 0 });
  });
});

describe('JudgedReads', () => {
  const reads = (bytes: number, tag = ''): FirstReads =>
    ({ bytes, fingerprint: tag }) as unknown as FirstReads;

  it('keeps the most recently used within its bytes and count; one too large is not kept', () => {
    const kept = new JudgedReads(100, 60, 3);
    kept.keep('t', 'a', reads(40, 'a'));
    kept.keep('t', 'b', reads(40, 'b'));
    expect(kept.recall('t', 'a')?.fingerprint).toBe('a'); // a is now the most recently used
    kept.keep('t', 'c', reads(40, 'c')); // 120 bytes: b, the least recently used, goes
    expect(kept.recall('t', 'b')).toBeUndefined();
    expect([kept.size, kept.bytes]).toEqual([2, 80]);
    kept.keep('t', 'd', reads(61)); // larger than one may be: not kept, and nothing else goes for it
    expect([kept.size, kept.bytes]).toEqual([2, 80]);
    kept.keep('t', 'a', reads(10, 'a2')); // kept again: counted once
    expect([kept.size, kept.bytes]).toEqual([2, 50]);
    kept.keep('t', 'e', reads(1));
    kept.keep('t', 'f', reads(1)); // a fourth: the count bound takes the oldest (c)
    expect([kept.size, kept.recall('t', 'c')]).toEqual([3, undefined]);
    expect(kept.recall('u', 'a')).toBeUndefined(); // another session's key
    kept.forget('t', 'a');
    expect([kept.size, kept.bytes]).toEqual([2, 2]);
  });
});
