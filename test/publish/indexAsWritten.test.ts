import { AtpAgent } from '@atproto/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { indexRecords, removeRecord } from '../../src/appview/store.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';

// A publish indexes each batch the PDS has taken while the next is written (the write-through overlaps the
// PDS's time), so what reached the PDS is readable here even if the publish stops part-way. The event stream
// would index the same records: this app follows no stream (a relay that is not there), so whatever is in the
// index came from the publish itself.

/**
 * The first applyWrites after one that succeeded is held until released, or answered with a rate limit that
 * resets in an hour (the publish pauses).
 */
const hold = {
  mode: 'hold' as 'hold' | 'pause' | 'lose',
  fired: 0,
  ok: 0,
  lost: 0,
  release: null as null | (() => void),
};
const holding: typeof fetch = async (input, init) => {
  const req = new Request(input, init);
  if (!req.url.includes('com.atproto.repo.applyWrites')) return fetch(req);
  // 'lose': the first write lands, and its answer is lost on the way back; the next is held.
  if (hold.mode === 'lose' && !hold.lost) {
    await fetch(req);
    hold.lost++;
    return Response.json({ error: 'InternalServerError', message: 'the answer was lost' }, { status: 502 });
  }
  if ((hold.ok >= 1 || hold.lost) && !hold.fired) {
    hold.fired++;
    if (hold.mode === 'pause')
      return Response.json(
        { error: 'RateLimitExceeded', message: 'come back in an hour' },
        { status: 429, headers: { 'ratelimit-reset': String(Math.ceil(Date.now() / 1000) + 3600) } },
      );
    await new Promise<void>((r) => {
      hold.release = r;
    });
  }
  const res = await fetch(req);
  if (res.ok) hold.ok++;
  return res;
};

let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };

beforeAll(async () => {
  local = await startLocalApp({ oauthFetch: holding, env: { INDEXER_RELAY_URL: 'ws://127.0.0.1:9' } });
  alice = await local.signInAs('alice.test');
}, 120_000);
afterAll(() => local?.close());

const indexedCount = async () => {
  const [row] = await local.app.db.sql<{ n: number }[]>`select
    (select count(*) from index_messages where did = ${alice.did})
    + (select count(*) from index_sessions where did = ${alice.did}) as n`;
  return Number(row!.n);
};

/** A Conversation of 250 turns: with its session, two batches of at most 200 writes. */
async function longConversation() {
  const sql = local.app.db.sql;
  const [npc] = await sql`insert into npcs (player_id, name) values (${alice.playerId}, 'Ada') returning id`;
  const [c] =
    await sql`insert into conversations (player_id, title) values (${alice.playerId}, 'Long') returning id`;
  await sql`insert into conversation_participants values (${c!.id}, ${npc!.id}, 0)`;
  // 250 turns and the session: two batches of at most 200 writes.
  await sql`insert into messages (conversation_id, role, npc_id, npc_name, parts, text, provider, model)
    select ${c!.id}, case when i % 2 = 0 then 'player' else 'npc' end,
      case when i % 2 = 0 then null else ${npc!.id}::uuid end, case when i % 2 = 0 then null else 'Ada' end,
      jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'Turn ' || i)), 'Turn ' || i, 'fake', 'fake-model'
    from generate_series(1, 250) i`;
  return c!.id as string;
}

/** Records the publication's store has marked written (on the PDS). */
async function writtenCount(conversationId: string) {
  const [row] = await local.app.db.sql<{ n: number }[]>`select count(*)::int as n from publication_records
    where conversation_id = ${conversationId} and pending is null and cid is not null`;
  return row!.n;
}

it('each batch the PDS took is in the index while the next is still being written', async () => {
  const sql = local.app.db.sql;
  const id = await longConversation();
  const put = local.app.api(`/api/conversations/${id}/publication`, {
    method: 'PUT',
    body: {},
    cookie: alice.cookie,
  });
  for (let i = 0; i < 400 && !hold.release; i++) await new Promise((r) => setTimeout(r, 25));
  expect(hold.fired).toBe(1);
  // The first batch, as the store marks it written: it must reach the index before the second is let go.
  expect(await writtenCount(id)).toBe(200);
  let seen = 0;
  for (let i = 0; i < 400 && seen < 200; i++) {
    seen = await indexedCount();
    if (seen < 200) await new Promise((r) => setTimeout(r, 25));
  }
  expect(seen).toBe(200);
  hold.release!();
  const res = await put;
  expect(res.status).toBe(200);
  expect(await indexedCount()).toBe(251);
  const { uri } = (await res.json()) as { uri: string };
  expect(await sql`select 1 from index_sessions where uri = ${uri}`).toHaveLength(1);
  await local.app.api(`/api/conversations/${id}/publication`, { method: 'DELETE', cookie: alice.cookie });
  expect(await indexedCount()).toBe(0);
}, 120_000);

it('a publish paused part-way leaves what reached the PDS readable', async () => {
  const id = await longConversation();
  Object.assign(hold, { mode: 'pause', fired: 0, ok: 0 });
  const res = await local.app.api(`/api/conversations/${id}/publication`, {
    method: 'PUT',
    body: {},
    cookie: alice.cookie,
  });
  expect(res.status).toBe(429);
  expect(hold.fired).toBe(1);
  expect(await writtenCount(id)).toBe(200);
  expect(await indexedCount()).toBe(200);
}, 120_000);

/**
 * A short Conversation of Player Messages, published with `publish`, whose turns the store then knows no rev for
 * (published before revs were kept, or their answers lost); and Alice's own client, another than ours.
 */
async function publishedWithoutRevs(title: string, texts: string[]) {
  const sql = local.app.db.sql;
  const [npc] = await sql`insert into npcs (player_id, name) values (${alice.playerId}, 'Bo') returning id`;
  const [c] =
    await sql`insert into conversations (player_id, title) values (${alice.playerId}, ${title}) returning id`;
  const id = c!.id as string;
  await sql`insert into conversation_participants values (${id}, ${npc!.id}, 0)`;
  const say = (text: string) => sql`insert into messages (conversation_id, role, parts, text)
    values (${id}, 'player', ${sql.json([{ type: 'text', text }])}, ${text})`;
  const publish = () =>
    local.app.api(`/api/conversations/${id}/publication`, { method: 'PUT', body: {}, cookie: alice.cookie });
  for (const t of texts) await say(t);
  expect((await publish()).status).toBe(200);
  const turns = await sql<
    { uri: string; collection: string; rkey: string; record: Record<string, unknown> }[]
  >`
    select 'at://' || ${alice.did} || '/' || collection || '/' || rkey as uri, collection, rkey, record
    from publication_records where conversation_id = ${id} and collection = 'click.aligned.chat.message'
    order by position`;
  await sql`update publication_records set rev = null where conversation_id = ${id}`;
  return { id, say, publish, turns, elsewhere: await aliceElsewhere() };
}

/** Alice's own client, another than ours, signed in to her PDS. */
async function aliceElsewhere() {
  const account = local.app.running.localnet!.accounts.find((a) => a.handle === 'alice.test')!;
  const agent = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
  await agent.login({ identifier: account.handle, password: account.password });
  return agent;
}

/** How many of a Conversation's published records the index holds. */
async function indexedOf(conversationId: string) {
  const [row] = await local.app.db.sql<{ n: number }[]>`select count(*)::int as n from publication_records p
    where p.conversation_id = ${conversationId} and exists (select 1 from index_messages im
      where im.uri = 'at://' || ${alice.did} || '/' || p.collection || '/' || p.rkey)`;
  return row!.n;
}

it('a later publish does not bring back a turn deleted since with another client, whatever rev the store knows', async () => {
  const sql = local.app.db.sql;
  const { id, say, publish, turns, elsewhere } = await publishedWithoutRevs('Short', ['First', 'Second']);
  expect(turns).toHaveLength(2);
  const deleted = turns[0]!;
  // Deleted with another client; the stream's delete, with its commit's rev, reaches the index (this app
  // follows no stream, so it is applied as the indexer would).
  const { data } = await elsewhere.com.atproto.repo.deleteRecord({
    repo: alice.did,
    collection: deleted.collection,
    rkey: deleted.rkey,
  });
  await removeRecord(sql, deleted.uri, data.commit!.rev);
  expect(await sql`select 1 from index_messages where uri = ${deleted.uri}`).toHaveLength(0);
  // The Player goes on and publishes again: the new turn is written, the deleted one is not.
  await say('Third');
  expect((await publish()).status).toBe(200);
  expect(await sql`select 1 from index_messages where uri = ${deleted.uri}`).toHaveLength(0);
  expect(await sql`select 1 from index_tombstones where uri = ${deleted.uri}`).toHaveLength(1);
  // The turns this publish did not touch are still indexed, and the new one is.
  expect(await sql`select 1 from index_messages where uri = ${turns[1]!.uri}`).toHaveLength(1);
  const [n] = await sql<{ n: number }[]>`select count(*)::int as n from index_messages im
    join publication_records p on im.uri = 'at://' || ${alice.did} || '/' || p.collection || '/' || p.rkey
    where p.conversation_id = ${id}`;
  expect(n!.n).toBe(2);
}, 120_000);

it('a later publish leaves the turns it did not write as the index holds them: an edit made with another client stays', async () => {
  const sql = local.app.db.sql;
  const { say, publish, turns, elsewhere } = await publishedWithoutRevs('Edited', ['As first written']);
  const turn = turns[0];
  // Edited with another client; the stream's update, with its commit's rev, reaches the index.
  const edited = { ...turn!.record, text: 'As edited elsewhere' };
  const { data } = await elsewhere.com.atproto.repo.putRecord({
    repo: alice.did,
    collection: turn!.collection,
    rkey: turn!.rkey,
    record: edited,
  });
  await indexRecords(sql, alice.did, [
    { collection: turn!.collection, rkey: turn!.rkey, cid: data.cid, record: edited, rev: data.commit!.rev },
  ]);
  const before = await sql`select written_at, record from index_messages where uri = ${turn!.uri}`;
  expect((before[0]!.record as { text: string }).text).toBe('As edited elsewhere');
  await say('Later');
  expect((await publish()).status).toBe(200);
  // Not written again from the store's (older) copy: not even touched.
  const after = await sql`select written_at, record from index_messages where uri = ${turn!.uri}`;
  expect(after).toEqual(before);
}, 120_000);

it('a delete made with another client while a publish runs stays, though the write it undoes lost its answer', async () => {
  const sql = local.app.db.sql;
  const id = await longConversation();
  Object.assign(hold, { mode: 'lose', fired: 0, ok: 0, lost: 0, release: null });
  const put = local.app.api(`/api/conversations/${id}/publication`, {
    method: 'PUT',
    body: {},
    cookie: alice.cookie,
  });
  for (let i = 0; i < 400 && !hold.release; i++) await new Promise((r) => setTimeout(r, 25));
  // The faults fired: the first batch landed with its answer lost (the store knows no rev), the second is held.
  expect([hold.lost, hold.fired]).toEqual([1, 1]);
  const [first] = await sql<{ collection: string; rkey: string; rev: string | null }[]>`
    select collection, rkey, rev from publication_records
    where conversation_id = ${id} and collection = 'click.aligned.chat.message' and cid is not null
    order by position limit 1`;
  expect(first!.rev).toBeNull();
  const uri = `at://${alice.did}/${first!.collection}/${first!.rkey}`;
  // Meanwhile deleted with another client; the stream's delete, with its commit's rev, reaches the index.
  const { data } = await (await aliceElsewhere()).com.atproto.repo.deleteRecord({
    repo: alice.did,
    collection: first!.collection,
    rkey: first!.rkey,
  });
  await removeRecord(sql, uri, data.commit!.rev);
  hold.release!();
  expect((await put).status).toBe(200);
  expect(await sql`select 1 from index_messages where uri = ${uri}`).toHaveLength(0);
  // Every other turn is indexed: the first batch's at the end (its rev unknown), the second's as it landed.
  expect(await indexedOf(id)).toBe(249);
}, 120_000);
