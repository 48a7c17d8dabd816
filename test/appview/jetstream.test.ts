import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { AtpAgent } from '@atproto/api';
import { TID } from '@atproto/common-web';
import { jsonToLex } from '@atproto/lexicon';
import { cidForRecord } from '@atproto/repo';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Indexer, startIndexer } from '../../src/appview/index.ts';
import { loadConfig } from '../../src/config.ts';
import { startJetstream, type TestJetstream } from '../support/jetstream.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { writeSession, writeTurns } from '../support/records.ts';

// The AppView can index from Jetstream instead of a relay (issue 17): a server speaking Jetstream's protocol,
// fed from the local PDS's firehose, stands in for the Go service.
let local: LocalApp;
let jet: TestJetstream;
let agent: AtpAgent;
let did: string;
const children: ChildProcess[] = [];
beforeAll(async () => {
  local = await startLocalApp();
  // The app's own (relay) indexer steps aside: the indexers below follow Jetstream.
  await local.app.running.indexer?.stop();
  const net = local.app.running.localnet!;
  jet = await startJetstream();
  jet.follow(net.pdsUrl.replace(/^http/, 'ws'), net.plcUrl);
  const bob = net.accounts.find((a) => a.handle === 'bob.test')!;
  agent = new AtpAgent({ service: net.pdsUrl });
  await agent.login({ identifier: bob.handle, password: bob.password });
  did = agent.session!.did;
}, 120_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await jet?.close();
  await local?.close();
});

const sql = () => local.app.db.sql;
/** An indexer in this process following a Jetstream server. */
const jetstreamIndexer = (url: string, log: (m: string) => void): Indexer =>
  startIndexer({
    sql: sql(),
    source: { kind: 'jetstream', url },
    plcUrl: local.app.running.localnet!.plcUrl,
    local: true,
    fetch: globalThis.fetch,
    log,
    retryMs: 100,
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => Promise<boolean>, what: string, tries = 300) {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}
const count = async (session: string) =>
  (
    await sql()<{ n: number }[]>`select count(*)::int as n from index_messages where session_uri = ${session}`
  )[0]!.n;
const cursors = async () =>
  (
    await sql()<{ relay: string | null; jetstream: string | null }[]>`select cursor::text as relay,
    jetstream_cursor::text as jetstream from index_state`
  )[0]!;

function indexerProcess() {
  const net = local.app.running.localnet!;
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.resolve(import.meta.dirname, '../support/indexerProcess.ts'),
      local.app.db.url,
      jet.url,
      net.plcUrl,
      'jetstream',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  const leading = new Promise<void>((resolve) =>
    child.stdout!.on('data', (d: Buffer) => {
      if (String(d).includes('leading')) resolve();
    }),
  );
  return { child, leading };
}

it('indexes from Jetstream in another process, asks only for our collections, and resumes from its µs cursor after kill -9', async () => {
  const relayBefore = (await cursors()).relay;
  const first = indexerProcess();
  await first.leading;
  const uri = await writeSession(agent, did, 'Through Jetstream');
  await writeTurns(agent, did, uri, 5, 'before');
  // A post of another app's collection: the PDS's firehose carries it, Jetstream does not send it to us.
  await agent.com.atproto.repo.createRecord({
    repo: did,
    collection: 'app.bsky.feed.post',
    record: { $type: 'app.bsky.feed.post', text: 'not ours', createdAt: new Date().toISOString() },
  });
  await until(async () => (await count(uri)) === 5, 'the first five turns');
  expect(jet.connections[0]!.getAll('wantedCollections')).toEqual(['click.aligned.chat.*']);
  expect(jet.connections[0]!.get('cursor')).toBeNull();
  expect(jet.sent.get('app.bsky.feed.post')).toBeUndefined();
  expect(jet.sent.get('click.aligned.chat.message')).toBeGreaterThanOrEqual(5);
  // The cursor is Jetstream's time in µs, kept apart from the relay's sequence number.
  await until(async () => (await cursors()).jetstream !== null, 'the cursor');
  const saved = Number((await cursors()).jetstream);
  expect(Math.abs(saved / 1000 - Date.now())).toBeLessThan(120_000);
  expect((await cursors()).relay).toBe(relayBefore);

  first.child.kill('SIGKILL');
  await writeTurns(agent, did, uri, 5, 'after');
  const connected = jet.connections.length;
  const second = indexerProcess();
  await second.leading;
  await until(async () => (await count(uri)) === 10, 'the turns written while no indexer ran', 600);
  // It resumed from the stored cursor, rewound a little (instances stamp their own times), not from live.
  const resumed = Number(jet.connections[connected]!.get('cursor'));
  expect(resumed).toBeLessThanOrEqual(Number((await cursors()).jetstream));
  expect(resumed).toBeGreaterThan(saved - 10_000_000);
  const texts = (
    await sql()<
      { t: string }[]
    >`select record->>'text' as t from index_messages where session_uri = ${uri} order by rkey`
  ).map((r) => r.t);
  expect(texts).toEqual([
    ...[0, 1, 2, 3, 4].map((i) => `before${i}`),
    ...[0, 1, 2, 3, 4].map((i) => `after${i}`),
  ]);

  // A deletion arrives the same way.
  const [firstTurn] = await sql()<
    { rkey: string }[]
  >`select rkey from index_messages where session_uri = ${uri} order by rkey limit 1`;
  await agent.com.atproto.repo.deleteRecord({
    repo: did,
    collection: 'click.aligned.chat.message',
    rkey: firstTurn!.rkey,
  });
  await until(async () => (await count(uri)) === 9, 'the deletion');
  second.child.kill('SIGKILL');
}, 180_000);

it('an instance that lies or breaks is contained: wrong cids, foreign collections, junk and oversized messages change nothing, and what follows is still indexed', async () => {
  const errors: string[] = [];
  const indexer: Indexer = jetstreamIndexer(jet.url, (m) => errors.push(m));
  try {
    await indexer.leading;
    const connectedBefore = jet.connections.length;
    await until(async () => jet.connections.length > connectedBefore, 'the connection');
    const session = `at://${did}/click.aligned.chat.session/${TID.nextStr()}`;
    const record = (text: string) => ({
      $type: 'click.aligned.chat.message',
      session,
      role: 'user',
      createdAt: '2026-11-30T00:00:00.000Z',
      text,
    });
    // The real cid of a real record, to reuse with another record.
    const real = await agent.com.atproto.repo.createRecord({
      repo: did,
      collection: 'click.aligned.chat.message',
      rkey: TID.nextStr(),
      record: record('genuine'),
    });
    const commit = (rkey: string, rec: unknown, cid: string, collection = 'click.aligned.chat.message') => ({
      did,
      kind: 'commit',
      commit: { rev: TID.nextStr(), operation: 'create', collection, rkey, record: rec, cid },
    });
    const forged = TID.nextStr();
    jet.inject(commit(forged, record('forged words'), real.data.cid));
    jet.inject(commit(TID.nextStr(), record('foreign'), real.data.cid, 'app.bsky.feed.post'));
    jet.inject('{ not json');
    jet.inject({ did, kind: 'mystery' });
    jet.inject({
      did: 'not-a-did',
      kind: 'commit',
      commit: { operation: 'delete', collection: 'click.aligned.chat.message', rkey: 'x' },
    });
    jet.inject(commit('../../etc', record('bad rkey'), real.data.cid));
    // Larger than the consumer takes: sent live, past the server's own filter, it closes the socket.
    jet.inject(JSON.stringify({ did, time_us: 1, kind: 'identity', pad: 'x'.repeat(5 * 1024 * 1024) }), {
      live: true,
      raw: true,
    });
    // Valid to the lexicon, with its own cid, but holding a NUL that jsonb refuses: skipped, not retried for ever.
    const nul = record('before\u0000after');
    const nulKey = TID.nextStr();
    jet.inject(commit(nulKey, nul, (await cidForRecord(jsonToLex(nul) as never)).toString()));
    const after = await writeSession(agent, did, 'After the junk');
    await until(
      async () => (await sql()`select 1 from index_sessions where uri = ${after}`).length > 0,
      'the next record',
      600,
    );
    expect(
      await sql()`select 1 from index_messages where uri = ${`at://${did}/click.aligned.chat.message/${forged}`}`,
    ).toHaveLength(0);
    expect(
      await sql()`select 1 from index_messages where record->>'text' in ('foreign', 'bad rkey')`,
    ).toHaveLength(0);
    expect(errors.some((e) => e.includes("the cid is not the record's"))).toBe(true);
    expect(await sql()`select 1 from index_messages where rkey = ${nulKey}`).toHaveLength(0);
    expect(errors.some((e) => e.includes('not JSON'))).toBe(true);
    // The oversized message ended that connection; the consumer came back and went on.
    expect(jet.connections.length).toBe(connectedBefore + 2);
    expect(errors.some((e) => e.includes('connection error'))).toBe(true);

    // An account deleted upstream leaves the index; a handle that does not resolve back is hidden.
    const victim = `did:plc:${'a'.repeat(24)}`;
    await sql()`insert into index_actors (did, handle, verified_at) values (${victim}, 'victim.test', now())`;
    await sql()`insert into index_sessions (uri, did, rkey, cid, record, created_at) values
      (${`at://${victim}/click.aligned.chat.session/x`}, ${victim}, 'x', ${real.data.cid}, '{}', now())`;
    jet.inject({ did: victim, kind: 'identity', identity: { did: victim, handle: 'bob.test' } });
    await until(
      async () => (await sql()`select handle from index_actors where did = ${victim}`)[0]?.handle === null,
      'the unverified handle to be hidden',
    );
    jet.inject({ did: victim, kind: 'account', account: { active: false, did: victim, status: 'deleted' } });
    await until(
      async () => (await sql()`select 1 from index_sessions where did = ${victim}`).length === 0,
      'the purge',
    );
  } finally {
    await indexer.stop();
  }
}, 120_000);

it('generated hostile records (deep, wide, huge, NUL, half surrogates, wrong types) are each skipped; a good record after them is indexed', async () => {
  const logged: string[] = [];
  const indexer: Indexer = jetstreamIndexer(jet.url, (m) => logged.push(m));
  try {
    const connectedBefore = jet.connections.length;
    await indexer.leading;
    // Connected before anything is sent: with no stored cursor it would follow live from then on.
    await until(async () => jet.connections.length > connectedBefore, 'the connection');
    const deep = (d: number, array: boolean) => {
      let v: unknown = 'x';
      for (let i = 0; i < d; i++) v = array ? [v] : { a: v };
      return v;
    };
    const base = { $type: 'click.aligned.chat.session', title: 'T', createdAt: '2026-11-30T00:00:00.000Z' };
    const hostile = fc.oneof(
      fc
        .tuple(fc.integer({ min: 33, max: 3000 }), fc.boolean())
        .map(([d, a]) => ({ ...base, x: deep(d, a) })),
      fc.integer({ min: 60_000, max: 120_000 }).map((n) => ({ ...base, wide: Array(n).fill(1) })),
      fc.integer({ min: 270_000, max: 400_000 }).map((n) => ({ ...base, title: 'y'.repeat(n) })),
      fc.constantFrom('\u0000', '\ud800', 'a\udfffb').map((bad) => ({ ...base, title: bad })),
      fc.record({
        $type: fc.constant('click.aligned.chat.session'),
        title: fc.anything(),
        createdAt: fc.anything(),
      }),
    );
    const skippedBefore = (await sql()`select skipped::int as n from index_state`)[0]!.n as number;
    const samples = fc.sample(hostile, { numRuns: 30, seed: 24 });
    const rkeys: string[] = [];
    for (const record of samples) {
      const rkey = TID.nextStr();
      rkeys.push(rkey);
      // Its real cid where one can be computed, so the record reaches the index's own checks.
      let cid = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
      try {
        cid = (await cidForRecord(jsonToLex(record as never) as never)).toString();
      } catch {}
      jet.inject({
        did,
        kind: 'commit',
        commit: {
          rev: TID.nextStr(),
          operation: 'create',
          collection: 'click.aligned.chat.session',
          rkey,
          record,
          cid,
        },
      });
    }
    const good = await writeSession(agent, did, 'After the hostile ones');
    await until(
      async () => (await sql()`select 1 from index_sessions where uri = ${good}`).length > 0,
      'the good record',
      600,
    );
    for (const rkey of rkeys)
      expect(await sql()`select 1 from index_sessions where rkey = ${rkey}`).toHaveLength(0);
    // Each was decided: skipped and counted by the index, or refused (and logged) before it.
    const skipped =
      ((await sql()`select skipped::int as n from index_state`)[0]!.n as number) - skippedBefore;
    const refusedEarly = logged.filter((m) =>
      /nested too deeply|too many values|too large|the cid is not/.test(m),
    ).length;
    expect(skipped + refusedEarly).toBeGreaterThanOrEqual(samples.length);

    // An account that is not active is hidden until it is active again (the status is Jetstream's own).
    const read = () =>
      fetch(
        `${local.app.running.listenUrl}/xrpc/click.aligned.chat.getThread?uri=${encodeURIComponent(good)}`,
      );
    expect((await read()).status).toBe(200);
    jet.inject({ did, kind: 'account', account: { active: false, did, status: 'suspended' } });
    await until(async () => (await read()).status !== 200, 'the thread to be hidden');
    jet.inject({ did, kind: 'account', account: { active: true, did } });
    await until(async () => (await read()).status === 200, 'the thread to be shown again');
  } finally {
    await indexer.stop();
  }
}, 120_000);

it("resumes a v2 instance from its own event number (exact), kept with the instance's host", async () => {
  const net = local.app.running.localnet!;
  const v2 = await startJetstream({ v2: true });
  v2.follow(net.pdsUrl.replace(/^http/, 'ws'), net.plcUrl);
  const start = () => jetstreamIndexer(v2.url, () => {});
  try {
    const first = start();
    await first.leading;
    await until(async () => v2.connections.length > 0, 'the connection');
    const uri = await writeSession(agent, did, 'Numbered');
    await writeTurns(agent, did, uri, 3, 'one');
    await until(async () => (await count(uri)) === 3, 'the first turns');
    await first.stop();
    const [saved] = await sql()<{ seq: string | null; host: string | null }[]>`
      select jetstream_seq::text as seq, jetstream_host as host from index_state`;
    expect(saved!.host).toBe(new URL(v2.url).host);
    expect(Number(saved!.seq)).toBeGreaterThan(0);
    await writeTurns(agent, did, uri, 3, 'two');
    const second = start();
    try {
      await second.leading;
      await until(async () => (await count(uri)) === 6, 'the turns written while it was stopped');
      // Resumed from the number, not from a rewound time.
      expect(v2.connections.at(-1)!.get('cursor')).toBe(saved!.seq);
    } finally {
      await second.stop();
    }
  } finally {
    await v2.close();
  }
}, 60_000);

it('is chosen by configuration, one source at a time', () => {
  expect(loadConfig({ INDEXER_JETSTREAM_URL: 'wss://jetstream.example/subscribe' }).indexerJetstreamUrl).toBe(
    'wss://jetstream.example/subscribe',
  );
  expect(() =>
    loadConfig({
      INDEXER_JETSTREAM_URL: 'wss://j.example/subscribe',
      INDEXER_RELAY_URL: 'wss://relay.example',
    }),
  ).toThrow(/not both/);
  expect(() => loadConfig({ INDEXER_JETSTREAM_URL: 'https://j.example/subscribe' })).toThrow(/ws:\/\//);
});
