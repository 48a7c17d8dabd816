import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { AtpAgent } from '@atproto/api';
import { jsonToIpld, TID } from '@atproto/common-web';
import { Secp256k1Keypair } from '@atproto/crypto';
import { cidForRecord } from '@atproto/repo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKFILL_LIMITS, backfillActor, pruneActors } from '../../src/appview/backfill.ts';
import { LOOKUP_PLACES, setLookupPlaces } from '../../src/appview/lookups.ts';
import { Network } from '../../src/appview/network.ts';
import type { TestApp } from '../support/app.ts';
import { didDocument } from '../support/didWeb.ts';
import { startOfflineApp } from '../support/localnet.ts';

/**
 * A PDS and DID document an attacker runs: the document claims someone else's handle, and the repo answers
 * every listRecords with 100 valid records and another cursor, for ever.
 */
async function hostilePds(
  mode: 'flood' | 'refs' = 'flood',
  hold?: Promise<void>,
  /**
   * In `refs` mode: the session's turns, and the posts each points at; with `hostile`, the posts 1–3 of each turn
   * are a record of megabytes sent gzip-compressed, one of twenty thousand values, and one not found.
   */
  shape: { turns: number; refs: number; hostile?: boolean; holdRecords?: Promise<void> } = {
    turns: 10,
    refs: 50,
  },
) {
  const key = await Secp256k1Keypair.create();
  const served = { pages: 0, didDocs: 0, getRecord: 0, asked: [] as string[] };
  const sessionRkey = TID.nextStr();
  let rkey = TID.nextStr();
  let did = '';
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    // Held: the repo answers nothing until the test lets it.
    if (hold && url.pathname === '/xrpc/com.atproto.repo.listRecords') await hold;
    if (url.pathname === '/.well-known/did.json') {
      served.didDocs++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(didDocument(did, key, base, 'alice.test')));
      return;
    }
    if (mode === 'refs' && url.pathname === '/xrpc/com.atproto.repo.listRecords') {
      // One session of 10 turns, each about 50 posts (500 refs in one thread), unless shaped otherwise.
      const collection = url.searchParams.get('collection')!;
      const sessionUri = `at://${did}/click.aligned.chat.session/${sessionRkey}`;
      const records =
        collection === 'click.aligned.chat.session'
          ? [
              {
                uri: sessionUri,
                cid: CID,
                value: {
                  $type: 'click.aligned.chat.session',
                  title: 'Many refs',
                  createdAt: new Date().toISOString(),
                },
              },
            ]
          : Array.from({ length: shape.turns }, (_, t) => {
              rkey = TID.nextStr(rkey);
              return {
                uri: `at://${did}/click.aligned.chat.message/${rkey}`,
                cid: CID,
                value: {
                  $type: 'click.aligned.chat.message',
                  session: sessionUri,
                  role: 'user',
                  text: `turn ${t}`,
                  createdAt: new Date().toISOString(),
                  // Pinned to the post as it was: { text: 'a post' }.
                  // With `hostile`, post 5's author is a DID nobody can resolve (its host refuses).
                  refs: Array.from({ length: shape.refs }, (_, i) => ({
                    uri:
                      shape.hostile && i === 5
                        ? `at://did:web:localhost%3A1/app.bsky.feed.post/p${t}x${i}`
                        : `at://${did}/app.bsky.feed.post/p${t}x${i}`,
                    cid: POST_CID,
                  })),
                },
              };
            });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ records }));
      return;
    }
    if (url.pathname === '/xrpc/com.atproto.repo.getRecord') {
      served.getRecord++;
      // Held: the records answer nothing until the test lets them.
      if (shape.holdRecords) await shape.holdRecords;
      res.setHeader('content-type', 'application/json');
      const rkey = url.searchParams.get('rkey') ?? '';
      served.asked.push(rkey);
      const uri = `at://${did}/${url.searchParams.get('collection')}/${rkey}`;
      // Every post is as pinned, except the first of each turn: edited, yet served under the pinned cid.
      const value = rkey.endsWith('x0') ? { ...POST, text: 'edited words' } : POST;
      if (shape.hostile && rkey.endsWith('x1')) {
        // 3 MB of JSON in a few KB on the wire: under the network's 4 MB, each costs seconds to parse and hash.
        res.setHeader('content-encoding', 'gzip');
        res.end(
          gzipSync(JSON.stringify({ uri, cid: POST_CID, value: { ...POST, pad: 'x'.repeat(3 << 20) } })),
        );
        return;
      }
      if (shape.hostile && rkey.endsWith('x2')) {
        res.end(JSON.stringify({ uri, cid: POST_CID, value: { ...POST, v: new Array(20_000).fill(0) } }));
        return;
      }
      if (shape.hostile && rkey.endsWith('x3')) {
        res.statusCode = 400;
        res.end(JSON.stringify({ error: 'RecordNotFound', message: 'Could not locate record' }));
        return;
      }
      res.end(JSON.stringify({ uri, cid: POST_CID, value }));
      return;
    }
    if (url.pathname === '/xrpc/com.atproto.repo.listRecords') {
      served.pages++;
      const collection = url.searchParams.get('collection')!;
      const records = Array.from({ length: 100 }, () => {
        rkey = TID.nextStr(rkey);
        return {
          uri: `at://${did}/${collection}/${rkey}`,
          cid: CID,
          value: { $type: 'click.aligned.chat.session', title: 'Spam', createdAt: new Date().toISOString() },
        };
      });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ records, cursor: `page-${served.pages}` }));
      return;
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ error: 'NotFound' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  const base = `http://localhost:${port}`;
  did = `did:web:localhost%3A${port}`;
  return { did, served, sessionRkey, close: () => new Promise<void>((r) => server.close(() => r())) };
}
const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
/** A post with a picture: its cid is computed from its JSON, as any PDS computes it (a blob ref included). */
const POST = {
  $type: 'app.bsky.feed.post',
  text: 'a post',
  createdAt: '2026-01-01T00:00:00.000Z',
  embed: {
    $type: 'app.bsky.embed.images',
    images: [
      {
        alt: '',
        image: {
          $type: 'blob',
          ref: { $link: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy' },
          mimeType: 'image/png',
          size: 1234,
        },
      },
    ],
  },
};
// Its CID as its repo holds it: the blob hashed as the link it is (as DAG-CBOR, not as a BlobRef object).
const POST_CID = (await cidForRecord(jsonToIpld(POST) as never)).toString();

let app: TestApp;
let pds: Awaited<ReturnType<typeof hostilePds>>;
beforeAll(async () => {
  app = await startOfflineApp({
    LOOKUP_CACHE_MS: '60000',
    // The pool of backfills is shared by reader address: the tests name two readers through the proxy header.
    TRUSTED_PROXIES: '127.0.0.1/32',
  });
  pds = await hostilePds();
}, 120_000);
afterAll(async () => {
  await pds?.close();
  await app?.close();
});

const get = (p: string) => fetch(`${app.running.listenUrl}${p}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('an anonymous reader pointed at a hostile PDS', () => {
  it('backfill stops at its caps, goes on without the reader, and is not repeated at once', async () => {
    const uri = `at://${pds.did}/click.aligned.chat.session/${TID.nextStr()}`;
    const first = await get(`/xrpc/click.aligned.chat.getThread?uri=${encodeURIComponent(uri)}`);
    expect(first.status).toBe(400);
    // The job runs to its caps in the background (time cap 20 s); give it time, then look.
    for (let i = 0; i < 100 && pds.served.pages < 10; i++) await sleep(100);
    await sleep(1000);
    const pages = pds.served.pages;
    // The fault was real (the PDS kept offering more), and the caps held: 10 pages, 1,000 records.
    expect(pages).toBe(10);
    const [{ n }] = (await app.db
      .sql`select count(*)::int as n from index_sessions where did = ${pds.did}`) as [{ n: number }];
    expect(n).toBeLessThanOrEqual(1000);
    expect(n).toBeGreaterThan(0);
    await sleep(1500);
    expect(pds.served.pages).toBe(pages);
    // Asked again at once: the author was read moments ago, so nothing more is fetched.
    await get(`/xrpc/click.aligned.chat.getThread?uri=${encodeURIComponent(uri)}`);
    await get(`/api/reader/threads/${encodeURIComponent(pds.did)}/${TID.nextStr()}`);
    await sleep(500);
    expect(pds.served.pages).toBe(pages);
  }, 60_000);

  it('a DID document that claims someone else’s handle is shown by its DID', async () => {
    const list = (await (
      await get(`/xrpc/click.aligned.chat.listSessions?actor=${encodeURIComponent(pds.did)}&limit=5`)
    ).json()) as { sessions: { uri: string; author: { did: string; handle?: string } }[] };
    expect(list.sessions.length).toBeGreaterThan(0);
    for (const s of list.sessions) expect(s.author).toEqual({ did: pds.did });
    const [actor] = await app.db.sql`select handle from index_actors where did = ${pds.did}`;
    expect(actor?.handle).toBeNull();
    // The document was read (the claim was seen) and refused.
    expect(pds.served.didDocs).toBeGreaterThan(0);
    const rkey = list.sessions[0]!.uri.split('/').pop()!;
    const html = await (
      await fetch(`${app.running.listenUrl}/profile/${encodeURIComponent(pds.did)}/thread/${rkey}`, {
        headers: { accept: 'text/html' },
      })
    ).text();
    expect(html).not.toContain('alice.test');
    expect(html).toContain(pds.did);
    // Looking the spoofed name up finds alice's own DID, never this one.
    const alice = (await (
      await get('/xrpc/click.aligned.chat.listSessions?actor=alice.test&limit=100')
    ).json()) as { sessions: { author: { did: string } }[] };
    expect(alice.sessions.every((s) => s.author.did !== pds.did)).toBe(true);
  }, 60_000);
});

/** The network as the server reads it offline, for backfills run with the tests' own limits. */
const localNetwork = () =>
  new Network({
    handleResolver: app.running.localnet!.pdsUrl,
    plcUrl: app.running.localnet!.plcUrl,
    local: true,
    fetch: globalThis.fetch,
  });

describe('the backfill queue', () => {
  it('when full, a reader is told to ask again (INDEXING), not that the thread does not exist', async () => {
    const network = localNetwork();
    let release = () => {};
    const slow = await hostilePds('flood', new Promise<void>((r) => (release = r)));
    try {
      const limits = { ...BACKFILL_LIMITS, concurrency: 1, waiting: 0, timeMs: 10_000 };
      // Its own registry (the test's connection pool), with one job at a time and no line. The first job is
      // held at the repo (it has asked for the records) while the second reader comes.
      const first = backfillActor(app.db.sql, network, slow.did, { waitMs: 10_000, limits });
      for (let i = 0; i < 100 && slow.served.didDocs === 0; i++) await sleep(20);
      await sleep(100);
      expect(
        await backfillActor(app.db.sql, network, 'did:plc:waitingforaturn000000000', {
          waitMs: 5000,
          limits,
        }),
      ).toBe(false);
      release();
      expect(await first).toBe(true);
    } finally {
      release();
      await slow.close();
    }
  }, 30_000);

  it('is shared fairly between readers: one naming many slow repos leaves a place for another', async () => {
    const network = localNetwork();
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    const slow = [await hostilePds('flood', held), await hostilePds('flood', held)];
    try {
      const limits = { ...BACKFILL_LIMITS, concurrency: 2, timeMs: 10_000 };
      const greedy = slow.map((p) =>
        backfillActor(app.db.sql, network, p.did, { requester: 'greedy', waitMs: 10_000, limits }),
      );
      // The first has its place and is held at the repo; the second waits: the last place is kept for others.
      for (let i = 0; i < 100 && slow[0]!.served.didDocs === 0; i++) await sleep(20);
      await sleep(200);
      expect(slow[0]!.served.didDocs).toBeGreaterThan(0);
      expect(slow[1]!.served.didDocs).toBe(0);
      // Another reader's backfill (an author nobody can resolve: read at once) is not kept behind them.
      const other = 'did:plc:anotherreader00000000000';
      expect(
        await backfillActor(app.db.sql, network, other, { requester: 'other', waitMs: 5000, limits }),
      ).toBe(true);
      // Another reader asking for the author waiting in the first reader's line asks under its own key: it runs.
      const joined = backfillActor(app.db.sql, network, slow[1]!.did, {
        requester: 'other',
        waitMs: 10_000,
        limits,
      });
      for (let i = 0; i < 100 && slow[1]!.served.didDocs === 0; i++) await sleep(20);
      expect(slow[1]!.served.didDocs).toBeGreaterThan(0);
      release();
      expect(await Promise.all([...greedy, joined])).toEqual([true, true, true]);
    } finally {
      release();
      await Promise.all(slow.map((p) => p.close()));
    }
  }, 30_000);

  it('keeps the handle verified before when the author cannot be resolved this time', async () => {
    const did = 'did:plc:keepsitshandle0000000000';
    await app.db.sql`insert into index_actors (did, handle, verified_at) values (${did}, 'kept.test', now())`;
    const limits = { ...BACKFILL_LIMITS, cooldownMs: 0 };
    expect(await backfillActor(app.db.sql, localNetwork(), did, { waitMs: 10_000, limits })).toBe(true);
    const [row] = await app.db.sql`select handle, backfilled_at from index_actors where did = ${did}`;
    expect(row!.backfilled_at).not.toBeNull();
    expect(row!.handle).toBe('kept.test');
  });

  it('forgets authors it keeps nothing of once their cool-down is over', async () => {
    const sql = app.db.sql;
    const did = (name: string) => `did:plc:${name.padEnd(24, 'p')}`;
    await sql`insert into index_actors (did, backfilled_at) values
      (${did('stale')}, now() - interval '1 hour'), (${did('fresh')}, now())`;
    await sql`insert into index_actors (did, backfilled_at) values (${did('kept')}, now() - interval '1 hour')`;
    await sql`insert into index_sessions (uri, did, rkey, cid, record) values
      (${`at://${did('kept')}/click.aligned.chat.session/3kkeptaaaaaaa`}, ${did('kept')}, '3kkeptaaaaaaa', ${CID},
       ${sql.json({ $type: 'click.aligned.chat.session', createdAt: '2026-01-01T00:00:00Z' })})`;
    expect(await pruneActors(sql, 10 * 60_000)).toBeGreaterThanOrEqual(1);
    const left = (
      await sql`select did from index_actors where did = any(${[did('stale'), did('fresh'), did('kept')]})`
    ).map((r) => r.did);
    expect(left.sort()).toEqual([did('fresh'), did('kept')].sort());
  });
});

describe('the backfill pool over HTTP', () => {
  const as = (ip: string, p: string) =>
    fetch(`${app.running.listenUrl}${p}`, { headers: { 'x-forwarded-for': ip } });
  const routes = {
    xrpc: async (ip: string, did: string) => {
      const uri = `at://${did}/click.aligned.chat.session/${TID.nextStr()}`;
      const res = await as(ip, `/xrpc/click.aligned.chat.getThread?uri=${encodeURIComponent(uri)}`);
      return ((await res.json()) as { error: string }).error;
    },
    api: async (ip: string, did: string) => {
      const res = await as(ip, `/api/reader/threads/${encodeURIComponent(did)}/${TID.nextStr()}`);
      return ((await res.json()) as { error: { code: string } }).error.code;
    },
    page: async (ip: string, did: string) =>
      String((await as(ip, `/profile/${encodeURIComponent(did)}/thread/${TID.nextStr()}`)).status),
  };
  const gone = { xrpc: 'NotFound', api: 'NOT_FOUND', page: '404' };

  it.each(Object.keys(routes) as (keyof typeof routes)[])(
    'through %s, one reader whose repos answer nothing leaves a place for another reader',
    async (route) => {
      let release = () => {};
      const held = new Promise<void>((r) => (release = r));
      const slow = await Promise.all([1, 2, 3].map(() => hostilePds('flood', held)));
      try {
        // Reader 1 takes every place but the one kept for other readers (3 of 4), and its repos answer nothing.
        const greedy = slow.map((p) => routes[route]('203.0.113.1', p.did));
        for (let i = 0; i < 200 && slow.some((p) => p.served.didDocs === 0); i++) await sleep(20);
        expect(slow.every((p) => p.served.didDocs > 0)).toBe(true);
        // Reader 2's thread, of an author nobody can resolve, is read at once: not found, not "still being read".
        const quick = `did:plc:${`quick${route}${Date.now()}`.padEnd(24, 'q').slice(0, 24)}`;
        expect(await routes[route]('203.0.113.2', quick)).toBe(gone[route]);
        release();
        await Promise.all(greedy);
      } finally {
        release();
        await Promise.all(slow.map((p) => p.close()));
      }
    },
    30_000,
  );
});

describe('lookups across reads', () => {
  it('are bounded in flight across every read, and shared by reader address', async () => {
    setLookupPlaces({ ...LOOKUP_PLACES, capacity: 2, perPlayer: 1, reserve: 1 });
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    const slow = await hostilePds('refs', undefined, { turns: 2, refs: 10, holdRecords: held });
    const quick = await hostilePds('refs', undefined, { turns: 1, refs: 3 });
    type Read = { thread: { messages: { refs: { state: string }[] }[] } };
    const read = async (ip: string, p: { did: string; sessionRkey: string }) =>
      (await (
        await fetch(
          `${app.running.listenUrl}/api/reader/threads/${encodeURIComponent(p.did)}/${p.sessionRkey}`,
          {
            headers: { 'x-forwarded-for': ip },
          },
        )
      ).json()) as Read;
    try {
      // Reader 1 reads, three times at once, a thread whose linked records never answer.
      const greedy = [1, 2, 3].map(() => read('203.0.113.7', slow));
      for (let i = 0; i < 200 && slow.served.getRecord === 0; i++) await sleep(20);
      await sleep(300);
      // One lookup of theirs is in flight, however many their reads ask for.
      expect(slow.served.getRecord).toBe(1);
      // Reader 1 reads a second thread too: its lookups wait behind reader 1's own.
      greedy.push(read('203.0.113.7', quick));
      await sleep(200);
      // Reader 2's read of it is looked up in the place kept for other readers, not made to wait in reader 1's line.
      const other = await read('203.0.113.8', quick);
      const states = other.thread.messages.flatMap((m) => m.refs.map((r) => r.state));
      expect(states).toHaveLength(3);
      expect(states.filter((s) => s === 'unchecked')).toEqual([]);
      release();
      await Promise.all(greedy);
    } finally {
      release();
      setLookupPlaces(LOOKUP_PLACES);
      await slow.close();
      await quick.close();
    }
  }, 30_000);
});

describe('a thread that points at hundreds of records', () => {
  it('one read looks up at most 40 of them; reading again reuses what was learnt', async () => {
    const refs = await hostilePds('refs');
    try {
      const read = async () =>
        (await (
          await get(`/api/reader/threads/${encodeURIComponent(refs.did)}/${refs.sessionRkey}`)
        ).json()) as {
          thread: { messages: { refs: { uri: string; state: string }[] }[] };
          window: { pages: number };
        };
      // A post served with other words under its pinned cid is "changed": the cid is computed, not taken.
      const honest = (r: { uri: string; state: string }) =>
        r.state === 'unchecked' || r.state === (r.uri.endsWith('x0') ? 'changed' : 'same');
      const first = await read();
      // A turn of 50 refs, each with the quote a lookup adds, weighs a page of its own: ten pages.
      expect(first.window.pages).toBe(10);
      const states = first.thread.messages.flatMap((m) => m.refs.map((r) => r.state));
      expect(states).toHaveLength(50);
      // The fault was offered (50 refs on the page), the bound held: 40 looked up, the rest marked unchecked.
      expect(refs.served.getRecord).toBe(40);
      expect(states.filter((s) => s !== 'unchecked')).toHaveLength(40);
      expect(states.filter((s) => s === 'unchecked')).toHaveLength(10);
      expect(first.thread.messages.flatMap((m) => m.refs).every(honest)).toBe(true);
      expect(states).toContain('changed');
      // Read again: the first 40 were remembered, so only the 10 left are looked up, and all 50 are shown.
      const second = (await read()).thread.messages.flatMap((m) => m.refs);
      expect(refs.served.getRecord).toBe(50);
      expect(second.filter((r) => r.state !== 'unchecked')).toHaveLength(50);
      expect(second.every(honest)).toBe(true);
    } finally {
      await refs.close();
    }
  }, 60_000);
});

describe('records a ref points at, as a hostile PDS serves them', () => {
  it('one too large (however compressed), of too many values, or whose author cannot be resolved is not checked; one not found is deleted', async () => {
    const refs = await hostilePds('refs', undefined, { turns: 1, refs: 6, hostile: true });
    try {
      const res = await get(`/api/reader/threads/${encodeURIComponent(refs.did)}/${refs.sessionRkey}`);
      const { thread } = (await res.json()) as {
        thread: { messages: { refs: { uri: string; state: string }[] }[] };
      };
      const states = Object.fromEntries(
        thread.messages.flatMap((m) => m.refs.map((r) => [r.uri.slice(-2), r.state])),
      );
      // The five on this PDS were asked for (the faults were offered), and each is told as what it is.
      expect(refs.served.getRecord).toBe(5);
      expect(states).toEqual({
        x0: 'changed',
        x1: 'unchecked',
        x2: 'unchecked',
        x3: 'deleted',
        x4: 'same',
        // Its author could not be resolved: not checked, never taken for deleted.
        x5: 'unchecked',
      });
    } finally {
      await refs.close();
    }
  }, 60_000);
});

describe('a long thread that points at records', () => {
  it("a page's read looks up that page's refs, within the bound, and no other page's", async () => {
    // 150 turns of one ref each: two pages (each ref weighs its quote too, so fewer than 100 turns a page).
    const refs = await hostilePds('refs', undefined, { turns: 150, refs: 1 });
    try {
      const read = async (page: number) =>
        (await (
          await get(`/api/reader/threads/${encodeURIComponent(refs.did)}/${refs.sessionRkey}?page=${page}`)
        ).json()) as {
          thread: { messages: { refs: { uri: string; state: string }[] }[] };
          window: { page: number; first: number; end: number; total: number };
        };
      const second = await read(2);
      const { first: from, end } = second.window;
      expect(second.window).toMatchObject({ page: 2, pages: 2, end: 150, total: 150 });
      const states = second.thread.messages.flatMap((m) => m.refs.map((r) => r.state));
      expect(states).toHaveLength(end - from);
      expect(end - from).toBeGreaterThan(40);
      // The bound held (40 of the page's refs), and each lookup was of one of page 2's own turns' posts.
      expect(refs.served.getRecord).toBe(40);
      expect(states.filter((s) => s !== 'unchecked')).toHaveLength(40);
      const turnOf = (rkey: string) => Number(/^p(\d+)x/.exec(rkey)![1]);
      expect(refs.served.asked.every((k) => turnOf(k) >= from)).toBe(true);
      // Page 1 spends its own bound on its own turns.
      refs.served.asked.length = 0;
      const first = await read(1);
      expect(first.thread.messages).toHaveLength(from);
      expect(refs.served.asked).toHaveLength(40);
      expect(refs.served.asked.every((k) => turnOf(k) < from)).toBe(true);
    } finally {
      await refs.close();
    }
  }, 60_000);
});

describe('handles are verified again', () => {
  it('a handle verified long ago is checked again before it is shown, and a wrong one corrected', async () => {
    const bob = app.running.localnet!.accounts.find((a) => a.handle === 'bob.test')!;
    const agent = new AtpAgent({ service: app.running.localnet!.pdsUrl });
    await agent.login({ identifier: bob.handle, password: bob.password });
    const rkey = TID.nextStr();
    await agent.com.atproto.repo.createRecord({
      repo: bob.did,
      collection: 'click.aligned.chat.session',
      rkey,
      record: { $type: 'click.aligned.chat.session', title: 'Mine', createdAt: new Date().toISOString() },
    });
    const list = async () =>
      (await (
        await get(`/xrpc/click.aligned.chat.listSessions?actor=${encodeURIComponent(bob.did)}`)
      ).json()) as {
        sessions: { author: { handle?: string } }[];
      };
    for (let i = 0; i < 100 && (await list()).sessions.length === 0; i++) await sleep(100);
    // The index holds a stale, wrong handle, verified two days ago.
    await app.db.sql`insert into index_actors (did, handle, verified_at)
      values (${bob.did}, 'mallory.test', now() - interval '2 days')
      on conflict (did) do update set handle = 'mallory.test', verified_at = now() - interval '2 days'`;
    expect((await list()).sessions[0]!.author.handle).toBe('bob.test');
    const [row] = await app.db.sql`select handle, verified_at > now() - interval '1 minute' as fresh
      from index_actors where did = ${bob.did}`;
    expect(row).toEqual({ handle: 'bob.test', fresh: true });
  }, 60_000);
});
