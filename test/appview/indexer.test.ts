import { Agent, AtpAgent } from '@atproto/api';
import { TID } from '@atproto/common-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIndexer } from '../../src/appview/index.ts';
import { setHandle } from '../../src/appview/store.ts';
import { indexFailureSwitch } from '../support/faults.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { writeSession, writeTurns } from '../support/records.ts';

let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };
let bob: AtpAgent;
let bobDid: string;

beforeAll(async () => {
  local = await startLocalApp();
  alice = await local.signInAs('alice.test');
  const account = local.app.running.localnet!.accounts.find((a) => a.handle === 'bob.test')!;
  bobDid = account.did;
  bob = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
  await bob.login({ identifier: account.handle, password: account.password });
  await local.app.running.indexer!.leading;
}, 120_000);
afterAll(() => local?.close());

const sql = () => local.app.db.sql;
const xrpc = async (nsid: string, params: Record<string, string>) => {
  const res = await fetch(`${local.app.running.listenUrl}/xrpc/${nsid}?${new URLSearchParams(params)}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const until = async (check: () => Promise<boolean>, what: string) => {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
};
/** Another indexer on the same database, as a second server process would start one. */
const anotherIndexer = () =>
  startIndexer({
    sql: sql(),
    source: { kind: 'relay', url: local.app.running.localnet!.pdsUrl.replace(/^http/, 'ws') },
    plcUrl: local.app.running.localnet!.plcUrl,
    fetch: globalThis.fetch,
    local: true,
    log: () => {},
    retryMs: 100,
  });
const indexed = async (uri: string) =>
  (await sql()`select 1 from index_sessions where uri = ${uri}`).length > 0;

async function publishFixture(turns: number) {
  const db = sql();
  const [npc] = await db`insert into npcs (player_id, name) values (${alice.playerId}, 'Ada') returning id`;
  const [c] =
    await db`insert into conversations (player_id, title) values (${alice.playerId}, 'Indexed') returning id`;
  await db`insert into conversation_participants values (${c!.id}, ${npc!.id}, 0)`;
  await db`insert into messages (conversation_id, role, npc_id, npc_name, parts, text, provider, model)
    select ${c!.id}, case when i % 2 = 1 then 'player' else 'npc' end, case when i % 2 = 1 then null else ${npc!.id}::uuid end,
      case when i % 2 = 1 then null else 'Ada' end, jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'turn ' || i)),
      'turn ' || i, 'fake', 'fake-model'
    from generate_series(1, ${turns}) i`;
  const res = await local.app.api(`/api/conversations/${c!.id}/publication`, {
    method: 'PUT',
    body: {},
    cookie: alice.cookie,
  });
  expect(res.status).toBe(200);
  return { conversationId: c!.id as string, uri: ((await res.json()) as { uri: string }).uri };
}

describe('the indexer', () => {
  it('sees a publication; the XRPC queries serve it in reading order; deletions vanish at once', async () => {
    const one = await publishFixture(4);
    const two = await publishFixture(2);
    await until(() => indexed(two.uri), 'the second session');
    const thread = await xrpc('click.aligned.chat.getThread', { uri: one.uri });
    expect(thread.status).toBe(200);
    const messages = thread.body.messages as { uri: string; record: { text: string } }[];
    expect(messages.map((m) => m.record.text)).toEqual(['turn 1', 'turn 2', 'turn 3', 'turn 4']);
    expect(thread.body.session).toMatchObject({ author: { did: alice.did, handle: 'alice.test' } });
    const byActor = await xrpc('click.aligned.chat.listSessions', { actor: 'alice.test' });
    expect((byActor.body.sessions as { uri: string }[]).map((s) => s.uri)).toEqual(
      expect.arrayContaining([one.uri, two.uri]),
    );

    // The author deletes one turn by hand, and unpublishes the other thread.
    const agent = new Agent(await local.app.running.oauth.restore(alice.did));
    await agent.com.atproto.repo.deleteRecord({
      repo: alice.did,
      collection: 'click.aligned.chat.message',
      rkey: messages[1]!.uri.split('/').pop()!,
    });
    await local.app.api(`/api/conversations/${two.conversationId}/publication`, {
      method: 'DELETE',
      cookie: alice.cookie,
    });
    await until(async () => !(await indexed(two.uri)), 'the unpublished session to go');
    await until(
      async () => (await sql()`select 1 from index_messages where uri = ${messages[1]!.uri}`).length === 0,
      'the deleted turn to go',
    );
    const after = await xrpc('click.aligned.chat.getThread', { uri: one.uri });
    expect((after.body.messages as unknown[]).length).toBe(3);
    const gone = await xrpc('click.aligned.chat.getThread', { uri: two.uri });
    expect(gone.status).toBe(400);
  });

  it("indexes another app's records written with only the lexicon: minimal, future fields, unknown roles", async () => {
    const sessionRkey = TID.nextStr();
    const uri = `at://${bobDid}/click.aligned.chat.session/${sessionRkey}`;
    await bob.com.atproto.repo.applyWrites({
      repo: bobDid,
      writes: [
        {
          $type: 'com.atproto.repo.applyWrites#create',
          collection: 'click.aligned.chat.session',
          rkey: sessionRkey,
          value: {
            $type: 'click.aligned.chat.session',
            title: 'Hand-made',
            createdAt: new Date().toISOString(),
          },
        },
        {
          $type: 'com.atproto.repo.applyWrites#create',
          collection: 'click.aligned.chat.message',
          rkey: TID.nextStr(sessionRkey),
          value: {
            $type: 'click.aligned.chat.message',
            session: uri,
            role: 'user',
            createdAt: new Date().toISOString(),
          },
        },
        {
          $type: 'com.atproto.repo.applyWrites#create',
          collection: 'click.aligned.chat.message',
          rkey: TID.nextStr(),
          value: {
            $type: 'click.aligned.chat.message',
            session: uri,
            role: 'narrator',
            createdAt: new Date().toISOString(),
            text: 'Meanwhile…',
            mood: 'hopeful',
            futureThing: { a: 1 },
          },
        },
      ] as never,
    });
    await until(
      async () => (await sql()`select 1 from index_messages where session_uri = ${uri}`).length === 2,
      'the hand-made turns',
    );
    const thread = await xrpc('click.aligned.chat.getThread', { uri });
    expect((thread.body.messages as { record: { role: string } }[]).map((m) => m.record.role)).toEqual([
      'user',
      'narrator',
    ]);
    const page = await fetch(`${local.app.running.listenUrl}/api/reader/threads/bob.test/${sessionRkey}`);
    expect(page.status).toBe(200);
  });

  it("a turn in another author's session is not indexed; a turn updated to something invalid leaves the index", async () => {
    const { uri: aliceSession } = await publishFixture(2);
    await until(
      async () =>
        (await sql()`select 1 from index_messages where session_uri = ${aliceSession}`).length === 2,
      "Alice's turns",
    );
    const message = (session: string, text: string) => ({
      $type: 'click.aligned.chat.message',
      session,
      role: 'user',
      createdAt: new Date().toISOString(),
      text,
    });
    // Bob's repo names Alice's session, with a record key that sorts first in her thread.
    const injected = await bob.com.atproto.repo.createRecord({
      repo: bobDid,
      collection: 'click.aligned.chat.message',
      rkey: TID.nextStr(),
      record: message(aliceSession, 'injected by bob'),
      validate: false,
    });
    // And one of Bob's own turns, indexed, then blanked with a record the lexicon refuses.
    const own = `at://${bobDid}/click.aligned.chat.session/${TID.nextStr()}`;
    const rkey = TID.nextStr();
    await bob.com.atproto.repo.createRecord({
      repo: bobDid,
      collection: 'click.aligned.chat.message',
      rkey,
      record: message(own, 'soon blanked'),
      validate: false,
    });
    const ownUri = `at://${bobDid}/click.aligned.chat.message/${rkey}`;
    await until(
      async () => (await sql()`select 1 from index_messages where uri = ${ownUri}`).length === 1,
      'own',
    );
    await bob.com.atproto.repo.putRecord({
      repo: bobDid,
      collection: 'click.aligned.chat.message',
      rkey,
      record: { $type: 'click.aligned.chat.message', session: own, role: 'user' },
      validate: false,
    });
    // A later turn of Bob's own, indexed: everything before it in his repo's stream has been seen.
    const sentinel = await bob.com.atproto.repo.createRecord({
      repo: bobDid,
      collection: 'click.aligned.chat.message',
      record: message(own, 'sentinel'),
      validate: false,
    });
    await until(
      async () => (await sql()`select 1 from index_messages where uri = ${sentinel.data.uri}`).length === 1,
      'the sentinel',
    );
    expect(await sql()`select 1 from index_messages where uri = ${injected.data.uri}`).toHaveLength(0);
    expect(await sql()`select 1 from index_messages where uri = ${ownUri}`).toHaveLength(0);
    const thread = await xrpc('click.aligned.chat.getThread', { uri: aliceSession });
    const texts = (thread.body.messages as { record: { text?: string } }[]).map((m) => m.record.text);
    expect(texts).toEqual(['turn 1', 'turn 2']);
  });

  it('a name that is not a handle is never kept for an author, whatever an identity event says', async () => {
    const did = 'did:plc:notahandle0000000000000';
    await sql()`insert into index_actors (did, handle) values (${did}, 'old.test') on conflict do nothing`;
    const handleOf = async () => (await sql()`select handle from index_actors where did = ${did}`)[0]!.handle;
    for (const bad of ['x_y.evil.tld', 'alice.bsky.social@evil.tld', 'no-dots', '.test']) {
      await setHandle(sql(), did, bad);
      expect(await handleOf()).toBeNull();
    }
    await setHandle(sql(), did, 'fine.test');
    expect(await handleOf()).toBe('fine.test');
  });

  it('one read of a thread is bounded: 5,000 turns at most, and 16 MB at most, whatever the author wrote', async () => {
    const bigThread = async (name: string, turns: number, textChars: number) => {
      const did = `did:plc:${name.padEnd(24, 'z')}`;
      const session = `at://${did}/click.aligned.chat.session/3kbigaaaaaaaa`;
      await sql()`insert into index_actors (did, handle, verified_at) values (${did}, ${`${name}.test`}, now())`;
      await sql()`insert into index_sessions (uri, did, rkey, cid, record, created_at) values (${session}, ${did},
        '3kbigaaaaaaaa', 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm',
        ${sql().json({ $type: 'click.aligned.chat.session', title: name, createdAt: '2026-01-01T00:00:00Z' })}, now())`;
      await sql()`insert into index_messages (uri, did, rkey, session_uri, cid, record, view)
        select u, ${did}, lpad(i::text, 8, '0'), ${session}, 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm', r,
          json_build_object('uri', u, 'cid', 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm', 'record', r)::text
        from generate_series(1, ${turns}) i,
          lateral (select ${`at://${did}/click.aligned.chat.message/`} || lpad(i::text, 8, '0') as u,
            jsonb_build_object('$type', 'click.aligned.chat.message', 'session', ${session}::text, 'role', 'user',
              'createdAt', '2026-01-01T00:00:00Z', 'text', repeat('x', ${textChars})) as r) x`;
      return session;
    };
    const turnsOf = async (uri: string) => {
      const res = await xrpc('click.aligned.chat.getThread', { uri });
      expect(res.status).toBe(200);
      return (res.body.messages as unknown[]).length;
    };
    const many = await bigThread('many', 5_200, 10);
    expect(await turnsOf(many)).toBe(5_000);
    // The reader's own API reads the same bounds.
    const [, , did] = many.split('/');
    const page = await fetch(
      `${local.app.running.listenUrl}/api/reader/threads/${encodeURIComponent(did!)}/3kbigaaaaaaaa`,
    );
    expect(page.status).toBe(200);
    // …one page of them at a time (src/markdown/pages.ts), of the 5,000 it reads.
    const answer = (await page.json()) as { thread: { messages: unknown[] }; window: { total: number } };
    expect(answer.window.total).toBe(5_000);
    expect(answer.thread.messages).toHaveLength(100);
    // 200 turns of 100 KB: what fits in 16 MB, from the start.
    const heavy = await turnsOf(await bigThread('heavy', 200, 100_000));
    expect(heavy).toBeGreaterThan(150);
    expect(heavy).toBeLessThan(170);
  });

  it('skips more than a thousand fuzzed invalid records without crashing, and goes on indexing', async () => {
    const [before] = await sql()`select skipped::int as n from index_state`;
    const junk = (i: number) => {
      const variants: unknown[] = [
        { $type: 'click.aligned.chat.message', role: 'user', createdAt: 'yesterday', session: `at://x/${i}` },
        { $type: 'click.aligned.chat.message', session: 42, role: ['user'], createdAt: null },
        {
          $type: 'click.aligned.chat.message',
          session: 'not-a-uri',
          role: 'user',
          createdAt: new Date().toISOString(),
          text: 'x'.repeat(15_001),
        },
        { $type: 'click.aligned.chat.session', title: { nested: true }, createdAt: 'no' },
        {
          $type: 'click.aligned.chat.message',
          session: `at://${bobDid}/click.aligned.chat.session/x`,
          role: 'user',
          createdAt: new Date().toISOString(),
          mentions: ['not a did'],
        },
      ];
      const value = variants[i % variants.length] as { $type: string };
      return {
        $type: 'com.atproto.repo.applyWrites#create',
        collection: value.$type,
        rkey: TID.nextStr(),
        value,
      };
    };
    for (let b = 0; b < 5; b++) {
      const writes = Array.from({ length: 205 }, (_, i) => junk(b * 205 + i));
      // Two calls per 205: under the PDS's request size cap.
      await bob.com.atproto.repo.applyWrites({ repo: bobDid, writes: writes.slice(0, 100) as never });
      await bob.com.atproto.repo.applyWrites({ repo: bobDid, writes: writes.slice(100) as never });
    }
    await until(
      async () =>
        Number((await sql()`select skipped::int as n from index_state`)[0]!.n) - Number(before!.n) >= 1000,
      'a thousand skips',
    );
    const fine = await publishFixture(1);
    await until(() => indexed(fine.uri), 'a valid record after the junk');
  });

  it('a record nested thousands of levels deep is skipped, counted and named; the index goes on', async () => {
    // Any repo can hold any record: the PDS stores an unvalidated one as it is.
    let deep: unknown = 'bottom';
    for (let i = 0; i < 1950; i++) deep = [deep];
    const rkey = TID.nextStr();
    const before = (await sql()`select skipped::int as n from index_state`)[0]!.n as number;
    await bob.com.atproto.repo.createRecord({
      repo: bobDid,
      collection: 'click.aligned.chat.session',
      rkey,
      validate: false,
      record: {
        $type: 'click.aligned.chat.session',
        title: 'Deep',
        createdAt: new Date().toISOString(),
        x: deep,
      },
    });
    const after = await writeSession(bob, bobDid, 'After the deep one');
    await until(() => indexed(after), 'the session written after it');
    expect(await indexed(`at://${bobDid}/click.aligned.chat.session/${rkey}`)).toBe(false);
    expect((await sql()`select skipped::int as n from index_state`)[0]!.n).toBeGreaterThan(before);
  });

  it('an account that is not active is hidden from every read until it is active again', async () => {
    const uri = await writeSession(bob, bobDid, 'Bob, before going quiet');
    await until(() => indexed(uri), 'the session');
    expect((await xrpc('click.aligned.chat.getThread', { uri })).status).toBe(200);
    const listed = async () =>
      ((await xrpc('click.aligned.chat.listSessions', {})).body.sessions as { uri: string }[]).some(
        (s) => s.uri === uri,
      );
    expect(await listed()).toBe(true);
    await bob.com.atproto.server.deactivateAccount({});
    try {
      await until(async () => (await xrpc('click.aligned.chat.getThread', { uri })).status !== 200, 'hidden');
      expect(await listed()).toBe(false);
      const page = await fetch(
        `${local.app.running.listenUrl}/api/reader/threads/bob.test/${uri.split('/').pop()}`,
      );
      expect(page.status).toBe(404);
      // Hidden, not forgotten: the records stay indexed for when the account comes back.
      expect(await indexed(uri)).toBe(true);
    } finally {
      await bob.com.atproto.server.activateAccount();
    }
    await until(
      async () => (await xrpc('click.aligned.chat.getThread', { uri })).status === 200,
      'shown again',
    );
    expect(await listed()).toBe(true);
  });

  it('a storage failure mid-stream is retried, never skipped: the index ends equal to the repo', async () => {
    const db = sql();
    const failures = await indexFailureSwitch(db);
    const uri = await writeSession(bob, bobDid, 'Failing');
    await until(() => indexed(uri), 'the session');
    await failures.on();
    try {
      await writeTurns(bob, bobDid, uri, 30, 'f');
      // The fault fired, more than once (retries), and nothing of it is in the index yet.
      await until(async () => (await failures.fired()) > 2, 'failures');
      expect(await db`select 1 from index_messages where session_uri = ${uri}`).toHaveLength(0);
    } finally {
      await failures.off();
    }
    await until(
      async () =>
        (await db`select count(*)::int as n from index_messages where session_uri = ${uri}`)[0]!.n === 30,
      'all 30 turns after the failure',
    );
    const inIndex = (
      await db`select uri, cid from index_messages where session_uri = ${uri} order by uri`
    ).map((r) => `${r.uri} ${r.cid}`);
    const inRepo = (
      await bob.com.atproto.repo.listRecords({
        repo: bobDid,
        collection: 'click.aligned.chat.message',
        limit: 100,
      })
    ).data.records
      .filter((r) => (r.value as { session: string }).session === uri)
      .map((r) => `${r.uri} ${r.cid}`)
      .sort();
    expect(inIndex).toEqual(inRepo);
    await failures.remove();
  });

  it('stopped mid-stream and restarted, it resumes from its cursor: nothing lost, nothing doubled', async () => {
    const uri = await writeSession(bob, bobDid, 'Resume');
    const write = (n: number) => writeTurns(bob, bobDid, uri, n, 'm');
    const writing = write(60);
    await until(
      async () => (await sql()`select 1 from index_messages where session_uri = ${uri}`).length >= 5,
      'some turns',
    );
    await local.app.running.indexer!.stop(); // mid-stream
    await writing;
    const again = anotherIndexer();
    try {
      await again.leading;
      await until(
        async () =>
          (await sql()`select count(*)::int as n from index_messages where session_uri = ${uri}`)[0]!.n ===
          60,
        'all 60 turns',
      );
      const texts = (
        await sql()`select record->>'text' as t from index_messages where session_uri = ${uri} order by rkey`
      ).map((r) => r.t);
      expect(texts).toEqual(Array.from({ length: 60 }, (_, i) => `m${i}`));
    } finally {
      await again.stop();
    }
  });

  it('runs once across server processes: a second indexer waits until the first lets go', async () => {
    const second = anotherIndexer();
    const third = anotherIndexer();
    try {
      let leaders = 0;
      void second.leading.then(() => leaders++);
      void third.leading.then(() => leaders++);
      await until(async () => leaders === 1, 'one leader');
      await new Promise((r) => setTimeout(r, 400));
      expect(leaders).toBe(1);
    } finally {
      await second.stop();
      await third.stop();
    }
  });

  it('purges an account that is deleted: none of its records stay in the index', async () => {
    const again = anotherIndexer();
    try {
      await again.leading;
      await until(
        async () => (await sql()`select 1 from index_sessions where did = ${bobDid}`).length > 0,
        "bob's sessions",
      );
      const admin = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
      admin.setHeader(
        'authorization',
        `Basic ${Buffer.from(`admin:${local.app.running.localnet!.adminPassword}`).toString('base64')}`,
      );
      await admin.com.atproto.admin.deleteAccount({ did: bobDid });
      await until(
        async () =>
          (
            await sql()`select 1 from index_sessions where did = ${bobDid} union all select 1 from index_messages where did = ${bobDid}`
          ).length === 0,
        "bob's records to be purged",
      );
    } finally {
      await again.stop();
    }
  });
});
