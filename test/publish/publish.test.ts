import { AtpAgent } from '@atproto/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishLexicons } from '../../scripts/publish-lexicons.ts';
import { REDACTION_BAR } from '../../src/redaction/index.ts';
import { insertConversation } from '../support/conversations.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { expectRepoToMatchPlan, sessionRecords } from '../support/publication.ts';

/** Faults injected between the server and the PDS, on the OAuth session's own HTTP client. */
const faults = {
  mode: 'none' as
    | 'none'
    | 'fail-2nd'
    | '429-once'
    | 'drop-after-send'
    | 'pause-2nd'
    | 'land-on-last'
    | 'down'
    | 'refuse',
  calls: 0,
  /** How many faults were injected: a fault test proves its fault happened. */
  fired: 0,
  bodies: [] as string[],
};
const faultyFetch: typeof fetch = async (input, init) => {
  const req = new Request(input, init);
  const body = req.method === 'POST' ? await req.clone().text() : '';
  if (body) faults.bodies.push(body);
  if (!req.url.includes('com.atproto.repo.applyWrites')) return fetch(req);
  faults.calls++;
  if (faults.mode === 'fail-2nd' && faults.calls === 2) {
    faults.fired++;
    return Response.json({ error: 'InternalServerError', message: 'injected failure' }, { status: 500 });
  }
  if (faults.mode === '429-once' && faults.calls === 1) {
    faults.fired++;
    return Response.json(
      { error: 'RateLimitExceeded', message: 'slow down' },
      { status: 429, headers: { 'ratelimit-reset': String(Math.ceil(Date.now() / 1000) + 1) } },
    );
  }
  if (faults.mode === 'pause-2nd' && faults.calls === 2) {
    faults.fired++;
    return Response.json(
      { error: 'RateLimitExceeded', message: 'come back in an hour' },
      { status: 429, headers: { 'ratelimit-reset': String(Math.ceil(Date.now() / 1000) + 3600) } },
    );
  }
  // Four answers of 500 before the PDS sees the batch, then the fifth (the last attempt) lands and its answer is lost.
  if (faults.mode === 'land-on-last' && faults.calls <= 5) {
    faults.fired++;
    if (faults.calls < 5)
      return Response.json({ error: 'InternalServerError', message: 'injected failure' }, { status: 500 });
    await fetch(req);
    throw new TypeError('fetch failed: socket hang up');
  }
  // The PDS out of reach until the test brings it back; or refusing every write.
  if (faults.mode === 'down') {
    faults.fired++;
    return Response.json({ error: 'InternalServerError', message: 'injected outage' }, { status: 503 });
  }
  if (faults.mode === 'refuse') {
    faults.fired++;
    return Response.json({ error: 'InvalidRequest', message: 'injected refusal' }, { status: 400 });
  }
  if (faults.mode === 'drop-after-send' && faults.calls === 1) {
    faults.fired++;
    await fetch(req); // the PDS applies the batch; the answer never arrives
    throw new TypeError('fetch failed: socket hang up');
  }
  return fetch(req);
};

let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };
let post: { uri: string; cid: string };
let bobDid: string;

beforeAll(async () => {
  local = await startLocalApp({ oauthFetch: faultyFetch, env: { LIVE_RETRY_SECONDS: '1' } });
  alice = await local.signInAs('alice.test');
  const bob = local.app.running.localnet!.accounts.find((a) => a.handle === 'bob.test')!;
  bobDid = bob.did;
  const agent = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
  await agent.login({ identifier: bob.handle, password: bob.password });
  post = await agent.post({ text: 'Maps are the best', createdAt: new Date().toISOString() });
}, 120_000);
afterAll(() => local?.close());

async function fixture(extraTurns = 0) {
  const sql = local.app.db.sql;
  const [npc] = await sql`insert into npcs (player_id, name, job_title, description, prompt)
    values (${alice.playerId}, 'Ada', 'Librarian', 'Keeps the maps.', 'SECRET SYSTEM PROMPT') returning id`;
  const [c] =
    await sql`insert into conversations (player_id, title) values (${alice.playerId}, 'Maps') returning id`;
  await sql`insert into conversation_participants values (${c!.id}, ${npc!.id}, 0)`;
  const turns: [string, string | null, unknown[]][] = [
    [
      'player',
      null,
      [
        {
          type: 'text',
          text: `Is https://bsky.app/profile/bob.test/post/${post.uri.split('/').pop()} right, @bob.test?`,
        },
      ],
    ],
    [
      'npc',
      'Ada',
      [
        { type: 'reasoning', text: 'PRIVATE REASONING' },
        {
          type: 'tool',
          id: 'c1',
          name: 'search',
          input: { q: 'maps' },
          state: 'done',
          output: 'PRIVATE TOOL OUTPUT',
        },
        { type: 'tool', id: 'c2', name: 'fetch', input: { url: 'x' }, state: 'failed', error: 'timeout' },
        { type: 'text', text: 'Yes. The vault code is 7391-SECRET, keep it safe.' },
      ],
    ],
    ['player', null, [{ type: 'text', text: 'A question I would rather not publish.' }]],
    ['npc', 'Ada', [{ type: 'text', text: 'And the answer to it.' }]],
    ...Array.from({ length: extraTurns }, (_, i): [string, string | null, unknown[]] => [
      'player',
      null,
      [{ type: 'text', text: `more ${i}` }],
    ]),
  ];
  const ids: string[] = [];
  for (const [i, [role, name, parts]] of turns.entries()) {
    const text = (parts as { type: string; text?: string }[])
      .filter((p) => p.type === 'text')
      .map((p) => p.text)
      .join('\n\n');
    const [m] =
      await sql`insert into messages (conversation_id, role, npc_id, npc_name, parts, text, provider, model, created_at)
      values (${c!.id}, ${role}, ${role === 'npc' ? npc!.id : null}, ${name}, ${sql.json(parts as never)}, ${text},
        ${role === 'npc' ? 'fake' : null}, ${role === 'npc' ? 'fake-model' : null}, ${new Date(Date.UTC(2026, 10, 1, 10, i))})
      returning id`;
    ids.push(m!.id as string);
  }
  return { conversationId: c!.id as string, ids };
}

const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
  local.app.api(path, { ...init, cookie: alice.cookie });

async function listMine(collection: string) {
  const agent = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
  const res = await agent.com.atproto.repo.listRecords({
    repo: alice.did,
    collection,
    limit: 100,
    reverse: true,
  });
  return res.data.records;
}

function choicesFor(ids: string[]) {
  const secret = 'Yes. The vault code is 7391-SECRET, keep it safe.';
  const start = secret.indexOf('7391-SECRET');
  return {
    [ids[1]!]: {
      redactions: [{ start, end: start + '7391-SECRET'.length }],
      steps: ['Searched the map catalogue', null],
    },
    [ids[2]!]: { withheld: true },
    [ids[3]!]: { withheld: true },
  };
}

describe('publishing a Conversation to the Player’s PDS', () => {
  it('writes one session and one record per turn, in order, with holes, bars, steps, refs and mentions', async () => {
    const { conversationId, ids } = await fixture();
    faults.mode = 'none';
    faults.bodies = [];
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { title: 'About maps', choices: choicesFor(ids) },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { uri: string; calls: number };
    expect(body.calls).toBe(1);

    const [session] = (await listMine('click.aligned.chat.session')).filter((r) => r.uri === body.uri);
    expect(session?.value).toMatchObject({ title: 'About maps' });
    // Its name and Job Title only: the NPC's own description is not published unless the Player writes one.
    expect((session!.value as { agents: unknown }).agents).toEqual([{ name: 'Ada', role: 'Librarian' }]);
    const messages = (await listMine('click.aligned.chat.message')).filter(
      (r) => (r.value as { session: string }).session === body.uri,
    );
    expect(messages).toHaveLength(4);
    const rkeys = messages.map((m) => m.uri.split('/').pop()!);
    expect([...rkeys].sort()).toEqual(rkeys); // TID order is reading order
    const values = messages.map((m) => m.value as Record<string, unknown>);
    expect(values[0]).toMatchObject({
      role: 'user',
      refs: [{ uri: post.uri, cid: post.cid }],
      mentions: [bobDid],
    });
    expect(values[1]).toMatchObject({
      role: 'assistant',
      model: 'fake/fake-model',
      text: `Yes. The vault code is ${REDACTION_BAR}, keep it safe.`,
      steps: [
        { name: 'tool', summary: 'Searched the map catalogue' },
        { name: 'tool', summary: 'called a tool', failed: true },
      ],
    });
    // Holes: when the turn before them was, and no model.
    expect(values[2]).toEqual({
      $type: 'click.aligned.chat.message',
      session: body.uri,
      role: 'user',
      createdAt: '2026-11-01T10:01:00.000Z',
      withheld: true,
    });
    expect(values[3]).toEqual({
      $type: 'click.aligned.chat.message',
      session: body.uri,
      role: 'assistant',
      createdAt: '2026-11-01T10:01:00.000Z',
      withheld: true,
    });
    // Nothing private ever left the server: every byte sent to the PDS was captured.
    const sent = faults.bodies.join('\n');
    for (const secret of [
      '7391-SECRET',
      'PRIVATE REASONING',
      'PRIVATE TOOL OUTPUT',
      'SECRET SYSTEM PROMPT',
      'rather not publish',
      'answer to it',
    ]) {
      expect(sent).not.toContain(secret);
    }

    // Append a turn, edit a published one, retitle: same rkeys, the new turn after the others.
    const [late] = await local.app.db.sql`insert into messages (conversation_id, role, parts, text)
      values (${conversationId}, 'player', ${local.app.db.sql.json([{ type: 'text', text: 'One more thing' }])}, 'One more thing') returning id`;
    const again = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { title: 'About maps, revised', choices: { [ids[2]!]: { withheld: false } } },
    });
    expect(again.status).toBe(200);
    const after = (await listMine('click.aligned.chat.message')).filter(
      (r) => (r.value as { session: string }).session === body.uri,
    );
    expect(after.map((m) => m.uri.split('/').pop())).toEqual([...rkeys, expect.any(String)]);
    expect(after.at(-1)!.uri.split('/').pop()! > rkeys.at(-1)!).toBe(true);
    expect((after[2]!.value as { text?: string }).text).toBe('A question I would rather not publish.');
    expect((after[4]!.value as { text?: string }).text).toBe('One more thing');
    const [retitled] = (await listMine('click.aligned.chat.session')).filter((r) => r.uri === body.uri);
    expect((retitled!.value as { title: string }).title).toBe('About maps, revised');
    expect(late).toBeTruthy();

    // Unpublish: every record deleted, verified by listing.
    const gone = await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
    expect(gone.status).toBe(204);
    expect(
      (await listMine('click.aligned.chat.message')).filter(
        (r) => (r.value as { session: string }).session === body.uri,
      ),
    ).toEqual([]);
    expect((await listMine('click.aligned.chat.session')).filter((r) => r.uri === body.uri)).toEqual([]);
    expect(
      (
        (await (await api(`/api/conversations/${conversationId}/publication`)).json()) as {
          publication: unknown;
        }
      ).publication,
    ).toBeNull();
  }, 60_000);

  for (const mode of ['fail-2nd', '429-once', 'drop-after-send'] as const) {
    it(`resumes to exactly the planned records when the PDS side fails (${mode})`, async () => {
      // 250 turns: two batches, so a failure can land between them.
      const { conversationId } = await fixture(250);
      faults.mode = mode;
      faults.calls = 0;
      faults.fired = 0;
      let res = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} });
      // The plan as stored when the first attempt ended: resuming must write exactly this, nothing else.
      const planOf = () => local.app.db.sql`select rkey, collection, record from publication_records
        where conversation_id = ${conversationId} order by position`;
      const planned = await planOf();
      if (res.status !== 200) {
        // A failure the writer does not retry by itself leaves the plan stored; resuming finishes it.
        expect(res.status).toBe(502);
        res = await api(`/api/conversations/${conversationId}/publication/resume`, { method: 'POST' });
      }
      expect(res.status).toBe(200);
      expect(faults.fired).toBe(1);
      faults.mode = 'none';
      const { publication } = (await (
        await api(`/api/conversations/${conversationId}/publication`)
      ).json()) as {
        publication: { uri: string; status: string };
      };
      expect(publication.status).toBe('published');
      expect(await planOf()).toEqual(planned);
      await expectRepoToMatchPlan(local, alice.did, conversationId, publication.uri);
      await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
    }, 90_000);
  }

  it('a batch that lands on the last attempt, its answer lost, is found written: the publish finishes, no duplicate', async () => {
    const { conversationId } = await fixture();
    faults.mode = 'land-on-last';
    faults.calls = 0;
    faults.fired = 0;
    const res = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} });
    expect(faults.fired).toBe(5);
    faults.mode = 'none';
    expect(res.status).toBe(200);
    const { publication } = (await (
      await api(`/api/conversations/${conversationId}/publication`)
    ).json()) as {
      publication: { uri: string; status: string };
    };
    expect(publication.status).toBe('published');
    await expectRepoToMatchPlan(local, alice.did, conversationId, publication.uri);
    await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
  }, 90_000);

  it('a publish or unpublish the PDS failed part-way is finished in the background once it is back (ADR 0091)', async () => {
    const { conversationId } = await fixture();
    const state = async () => {
      const [row] = await local.app.db.sql<{ status: string; due: Date | null; failures: number }[]>`
        select status, retry_due_at as due, retry_failures as failures from publications
        where conversation_id = ${conversationId}`;
      return row;
    };
    const until = async (done: () => Promise<boolean>) => {
      for (let i = 0; i < 300 && !(await done()); i++) await new Promise((r) => setTimeout(r, 100));
      expect(await done()).toBe(true);
    };
    faults.mode = 'down';
    faults.fired = 0;
    const res = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} });
    expect(res.status).toBe(502);
    expect(faults.fired).toBeGreaterThan(0);
    expect(await state()).toMatchObject({ status: 'failed', failures: 1, due: expect.any(Date) });
    // Back: no request of the Player's finishes it.
    faults.mode = 'none';
    await until(async () => (await state())?.status === 'published');
    expect(await state()).toMatchObject({ due: null, failures: 0 });
    const { publication } = (await (
      await api(`/api/conversations/${conversationId}/publication`)
    ).json()) as {
      publication: { uri: string };
    };
    await expectRepoToMatchPlan(local, alice.did, conversationId, publication.uri);

    // An unpublish that stopped part-way takes down what is still out, once the PDS is back.
    faults.mode = 'down';
    const gone = await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
    expect(gone.status).toBe(502);
    expect(await state()).toMatchObject({ status: 'unpublishing', due: expect.any(Date) });
    faults.mode = 'none';
    await until(async () => (await state()) === undefined);
    expect((await sessionRecords(local.app.running.localnet!.pdsUrl, alice.did, publication.uri)).size).toBe(
      0,
    );
  }, 90_000);

  it('a publish whose path moved since it was reviewed is not finished in the background: it waits for the Player', async () => {
    const { conversationId } = await fixture();
    faults.mode = 'down';
    const res = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} });
    expect(res.status).toBe(502);
    // As a reply regenerated since would: the path shown no longer starts with the one reviewed.
    await local.app.db.sql`update publications set reviewed_path = array[gen_random_uuid()],
      retry_due_at = now() where conversation_id = ${conversationId}`;
    faults.mode = 'none';
    faults.calls = 0;
    const row = async () =>
      (
        await local.app.db.sql`select status, retry_due_at as due from publications
          where conversation_id = ${conversationId}`
      )[0]!;
    for (let i = 0; i < 100 && (await row()).due !== null; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await row()).toMatchObject({ status: 'failed', due: null });
    expect(faults.calls).toBe(0);
    await local.app.db.sql`delete from publications where conversation_id = ${conversationId}`;
  }, 60_000);

  it('a moved path does not hold back writes that only change records already out (a cover written at once)', async () => {
    const { conversationId } = await fixture();
    const res = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} });
    expect(res.status).toBe(200);
    const { uri } = (await res.json()) as { uri: string };
    // Left failed with an update of a record that is out, as a cover whose write failed leaves it; and the path
    // moved since it was reviewed.
    const sql = local.app.db.sql;
    const [row] = await sql<{ rkey: string; record: { text: string } }[]>`
      select rkey, record from publication_records where conversation_id = ${conversationId}
        and collection = 'click.aligned.chat.message' order by position limit 1`;
    await sql`update publication_records set pending = 'update',
        record = jsonb_set(record, '{text}', to_jsonb(${`${REDACTION_BAR} now covered`}::text))
      where conversation_id = ${conversationId} and rkey = ${row!.rkey}`;
    await sql`update publications set status = 'failed', reviewed_path = array[gen_random_uuid()],
      retry_due_at = now() where conversation_id = ${conversationId}`;
    const status = async () =>
      (await sql`select status from publications where conversation_id = ${conversationId}`)[0]!.status;
    for (let i = 0; i < 100 && (await status()) !== 'published'; i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(await status()).toBe('published');
    const out = await sessionRecords(local.app.running.localnet!.pdsUrl, alice.did, uri);
    expect((out.get(`click.aligned.chat.message/${row!.rkey}`)!.value as { text: string }).text).toBe(
      `${REDACTION_BAR} now covered`,
    );
    await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
  }, 60_000);

  it('a write the PDS refused is not tried again by itself: the Player is shown why', async () => {
    const { conversationId } = await fixture();
    faults.mode = 'refuse';
    faults.fired = 0;
    const res = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} });
    faults.mode = 'none';
    expect(res.status).toBe(502);
    expect(faults.fired).toBe(1);
    const [row] = await local.app.db.sql`select status, retry_due_at as due, retry_failures as failures
      from publications where conversation_id = ${conversationId}`;
    expect(row).toMatchObject({ status: 'failed', due: null, failures: 1 });
    // Resumed by hand, it finishes.
    const resumed = await api(`/api/conversations/${conversationId}/publication/resume`, { method: 'POST' });
    expect(resumed.status).toBe(200);
    await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
  }, 60_000);

  it('refuses before any byte reaches the PDS when a turn is too long or a mention does not resolve', async () => {
    const { conversationId, ids } = await fixture();
    await local.app.db
      .sql`update messages set parts = ${local.app.db.sql.json([{ type: 'text', text: 'z'.repeat(15_001) }])}
      where id = ${ids[3]!}`;
    faults.calls = 0;
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[0]!]: { mentions: ['@nobody.test'] } } },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as {
      error: { code: string; details: { problems: { code: string; turn: number }[] } };
    };
    expect(body.error.code).toBe('PUBLISH_PROBLEMS');
    expect(body.error.details.problems.map((p) => [p.code, p.turn])).toEqual([
      ['UNRESOLVED_MENTION', 1],
      ['TEXT_TOO_LONG', 4],
    ]);
    expect(faults.calls).toBe(0);
    expect(
      (
        (await (await api(`/api/conversations/${conversationId}/publication`)).json()) as {
          publication: unknown;
        }
      ).publication,
    ).toBeNull();
  }, 60_000);

  it('a publish of the turns the Player looked over is refused once another turn has come: nothing is written', async () => {
    const { conversationId, ids } = await fixture();
    faults.calls = 0;
    // The page was opened on the first three turns; the fourth came while it was open.
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: {}, path: ids.slice(0, -1) },
    });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('CONVERSATION_CHANGED');
    expect(faults.calls).toBe(0);
    // Reordered is changed too; the path as it stands publishes.
    const swapped = [ids[1]!, ids[0]!, ...ids.slice(2)];
    const again = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: {}, path: swapped },
    });
    expect(again.status).toBe(409);
    const ok = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: {}, path: ids },
    });
    expect(ok.status).toBe(200);
  }, 60_000);

  it('a reader sees the thread from the network: refs changed since or deleted, mentions as handles, bad records skipped', async () => {
    const { conversationId } = await fixture();
    const bob = local.app.running.localnet!.accounts.find((a) => a.handle === 'bob.test')!;
    const bobAgent = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
    await bobAgent.login({ identifier: bob.handle, password: bob.password });
    const fresh = await bobAgent.post({ text: 'Version one', createdAt: new Date().toISOString() });
    const freshRkey = fresh.uri.split('/').pop()!;
    const [first] = await local.app.db
      .sql`select id from messages where conversation_id = ${conversationId} order by seq limit 1`;
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [first!.id as string]: { refs: [fresh.uri] } } },
    });
    const { uri } = (await res.json()) as { uri: string };
    const rkey = uri.split('/').pop()!;
    // A third-party record for the same session that fails the lexicon is skipped, not shown.
    const aliceAgent = new (await import('@atproto/api')).Agent(
      await local.app.running.oauth.restore(alice.did),
    );
    await aliceAgent.com.atproto.repo.createRecord({
      repo: alice.did,
      collection: 'click.aligned.chat.message',
      record: { $type: 'click.aligned.chat.message', session: uri, role: 'user', createdAt: 'not a date' },
    });
    const read = async () =>
      (
        (await (
          await fetch(`${local.app.running.listenUrl}/api/reader/threads/alice.test/${rkey}`)
        ).json()) as {
          thread: {
            messages: { refs: { uri: string; state: string }[]; mentions: { handle: string }[] }[];
            skipped: number;
          };
        }
      ).thread;
    let thread = await read();
    // The third-party record that fails the lexicon is not among the turns.
    expect(thread.messages).toHaveLength(4);
    expect(thread.messages[0]!.mentions).toEqual([{ did: bobDid, handle: 'bob.test' }]);
    expect(thread.messages[0]!.refs.map((r) => r.state)).toEqual(['same', 'same']);
    await bobAgent.com.atproto.repo.putRecord({
      repo: bob.did,
      collection: 'app.bsky.feed.post',
      rkey: freshRkey,
      record: { $type: 'app.bsky.feed.post', text: 'Version two', createdAt: new Date().toISOString() },
    });
    thread = await read();
    expect(thread.messages[0]!.refs.find((r) => r.uri === fresh.uri)?.state).toBe('changed');
    await bobAgent.deletePost(fresh.uri);
    thread = await read();
    expect(thread.messages[0]!.refs.find((r) => r.uri === fresh.uri)?.state).toBe('deleted');
  }, 60_000);

  it('the lexicon schemas publish as com.atproto.lexicon.schema records named by their NSID', async () => {
    const bob = local.app.running.localnet!.accounts.find((a) => a.handle === 'bob.test')!;
    const agent = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
    await agent.login({ identifier: bob.handle, password: bob.password });
    const uris = await publishLexicons(agent, bob.did);
    expect(uris).toEqual(
      ['defs', 'getThread', 'listSessions', 'message', 'session'].map(
        (n) => `at://${bob.did}/com.atproto.lexicon.schema/click.aligned.chat.${n}`,
      ),
    );
    const got = await agent.com.atproto.repo.getRecord({
      repo: bob.did,
      collection: 'com.atproto.lexicon.schema',
      rkey: 'click.aligned.chat.message',
    });
    expect(got.data.value).toMatchObject({ lexicon: 1, id: 'click.aligned.chat.message' });
  });

  it('cannot delete a published Conversation before unpublishing it', async () => {
    const { conversationId } = await fixture();
    expect(
      (await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} })).status,
    ).toBe(200);
    const del = await api(`/api/conversations/${conversationId}`, { method: 'DELETE' });
    expect(del.status).toBe(409);
    await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
    expect((await api(`/api/conversations/${conversationId}`, { method: 'DELETE' })).status).toBe(204);
  }, 60_000);

  it('a turn regenerated while a publish is paused is never written, and the plan is written exactly', async () => {
    const { conversationId } = await fixture(250);
    faults.mode = 'pause-2nd';
    faults.calls = 0;
    faults.fired = 0;
    const paused = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} });
    expect(paused.status).toBe(429);
    expect(faults.fired).toBe(1);
    faults.mode = 'none';
    // The last turn (in the batch that never went out) is deleted, as Regenerate deletes a reply.
    const [last] = await local.app.db.sql`delete from messages where id = (select id from messages
      where conversation_id = ${conversationId} order by seq desc limit 1) returning id`;
    const res = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} });
    expect(res.status).toBe(200);
    const { uri } = (await res.json()) as { uri: string };
    await expectRepoToMatchPlan(local, alice.did, conversationId, uri);
    const planned = await local.app.db.sql`select message_id from publication_records
      where conversation_id = ${conversationId} and message_id is not null`;
    expect(planned).toHaveLength(253);
    expect(planned.some((r) => r.message_id === last!.id)).toBe(false);
    await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
  }, 90_000);

  it('words redacted in a reply keep covering after the reply is regenerated, until the Player lets them go', async () => {
    const { conversationId, ids } = await insertConversation(local.app.db.sql, alice.playerId, {
      turns: [
        { role: 'player', parts: [{ type: 'text', text: 'Is the code 7391-SECRET?' }] },
        { role: 'npc', parts: [{ type: 'text', text: 'Yes, 7391-SECRET it is.' }] },
      ],
    });
    const at = 'Yes, '.length;
    const first = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[1]!]: { redactions: [{ start: at, end: at + 11 }] } } },
    });
    const { uri } = (await first.json()) as { uri: string };
    const texts = async () =>
      [...(await sessionRecords(local.app.running.localnet!.pdsUrl, alice.did, uri)).values()]
        .filter((r) => r.collection === 'click.aligned.chat.message')
        .map((r) => (r.value as { text: string }).text);
    expect((await texts()).sort()).toEqual(['Is the code ████████?', 'Yes, ████████ it is.']);

    // Regenerate: the reply goes, a new one comes.
    await local.app.db.sql`delete from messages where id = ${ids[1]!}`;
    await local.app.db.sql`insert into messages (conversation_id, role, parts, text)
      values (${conversationId}, 'npc', ${local.app.db.sql.json([{ type: 'text', text: 'A new answer.' }])}, 'A new answer.')`;
    const draft = (await (await api(`/api/conversations/${conversationId}/publication`)).json()) as {
      draft: { removedWords: string[] };
    };
    expect(draft.draft.removedWords).toEqual(['7391-SECRET']);
    expect(
      (await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} })).status,
    ).toBe(200);
    expect((await texts()).sort()).toEqual(['A new answer.', 'Is the code ████████?']);

    // Letting them go is the Player's explicit choice.
    await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { forgetRemoved: true },
    });
    expect((await texts()).sort()).toEqual(['A new answer.', 'Is the code 7391-SECRET?']);
    await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
  }, 60_000);

  it('an NPC whose every turn is withheld is not named among the session’s agents', async () => {
    const { conversationId, ids } = await insertConversation(local.app.db.sql, alice.playerId, {
      npc: { name: 'Mallory', jobTitle: 'Fixer', description: 'Knows people.' },
      turns: [
        { role: 'player', parts: [{ type: 'text', text: 'Who can help?' }] },
        { role: 'npc', parts: [{ type: 'text', text: 'Ask around the docks.' }] },
      ],
    });
    const preview = async (withheld: boolean) => {
      const res = await api(`/api/conversations/${conversationId}/publication/preview`, {
        body: { choices: { [ids[1]!]: { withheld } } },
      });
      const body = (await res.json()) as { records: { record: { agents?: { name: string }[] } }[] };
      return body.records[0]!.record.agents;
    };
    expect(await preview(false)).toEqual([{ name: 'Mallory', role: 'Fixer' }]);
    expect(await preview(true)).toEqual([]);
  }, 60_000);

  it('every published field is a choice: holes, agents and step names read back from the PDS', async () => {
    const card = 'You are Mallory. Backstory: grew up at 12 Rue Secrète. Never reveal the ledger.';
    const { conversationId, npcId, ids } = await insertConversation(local.app.db.sql, alice.playerId, {
      npc: { name: 'Mallory', jobTitle: 'Fixer', description: card },
      turns: [
        { role: 'player', parts: [{ type: 'text', text: 'Look it up.' }] },
        {
          role: 'npc',
          parts: [
            { type: 'tool', id: 't1', name: 'alice-payroll__lookup', input: {}, state: 'done' },
            { type: 'tool', id: 't2', name: 'remember', input: {}, state: 'done' },
            { type: 'text', text: 'Found it.' },
          ],
        },
        { role: 'npc', parts: [{ type: 'text', text: 'A reply to hold back.' }] },
      ],
    });
    const [hole] = await local.app.db.sql`update messages set created_at = '2026-11-01T10:17:42.5Z'
      where id = ${ids[2]!} returning created_at`;
    expect(hole).toBeTruthy();
    const publishAs = async (body: object) => {
      const res = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body });
      expect(res.status).toBe(200);
      const { uri } = (await res.json()) as { uri: string };
      const found = await sessionRecords(local.app.running.localnet!.pdsUrl, alice.did, uri);
      const values = [...found.values()].map((r) => r.value as Record<string, unknown>);
      const messages = [...found.entries()]
        .filter(([k]) => k.startsWith('click.aligned.chat.message/'))
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([, r]) => r.value as Record<string, unknown>);
      return { session: values.find((v) => v.$type === 'click.aligned.chat.session')!, messages };
    };

    const first = await publishAs({ choices: { [ids[2]!]: { withheld: true } } });
    expect(first.session.agents).toEqual([{ name: 'Mallory', role: 'Fixer' }]);
    expect(first.messages[1]!.steps).toEqual([
      { name: 'mcp-tool', summary: 'called a tool of an MCP Server' },
      { name: 'remember', summary: 'saved a memory' },
    ]);
    expect(first.messages[2]).toEqual({
      $type: 'click.aligned.chat.message',
      session: expect.any(String),
      role: 'assistant',
      createdAt: '2026-11-01T10:01:00.000Z',
      withheld: true,
    });
    expect(JSON.stringify(first)).not.toMatch(/Rue Secrète|ledger|payroll|17:42/);

    // Each kept or written by the Player: published as chosen.
    const second = await publishAs({
      agents: { [npcId]: { description: 'Knows everyone at the docks.' } },
      choices: {
        [ids[1]!]: { stepNames: ['alice-payroll__lookup', 'noted it'] },
        [ids[2]!]: { withheld: true, keepTime: true, keepModel: true },
      },
    });
    expect(second.session.agents).toEqual([
      { name: 'Mallory', role: 'Fixer', description: 'Knows everyone at the docks.' },
    ]);
    expect((second.messages[1]!.steps as { name: string }[]).map((s) => s.name)).toEqual([
      'alice-payroll__lookup',
      'noted it',
    ]);
    expect(second.messages[2]).toMatchObject({
      createdAt: '2026-11-01T10:17:42.500Z',
      model: 'fake/fake-model',
      withheld: true,
    });
    await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
  }, 60_000);

  it('a long Hindi turn publishes; one over the byte limit is refused with a message naming that limit', async () => {
    // 9,600 graphemes in 61,680 bytes: refused under the old 60,000-byte limit.
    const hindi = 'राष्ट्रीय स्वास्थ्य सांस्कृतिक व्यक्तित्व मनोवैज्ञानिक द्वन्द्वात्मक उज्ज्वलता स्पष्टीकरण। '.repeat(240);
    const { conversationId, ids } = await insertConversation(local.app.db.sql, alice.playerId, {
      turns: [
        { role: 'player', parts: [{ type: 'text', text: 'हिंदी में लिखिए।' }] },
        { role: 'npc', parts: [{ type: 'text', text: hindi }] },
        { role: 'npc', parts: [{ type: 'text', text: '👨‍👩‍👧‍👦'.repeat(7_000) }] },
      ],
    });
    const refused = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: {},
    });
    expect(refused.status).toBe(400);
    const { error } = (await refused.json()) as {
      error: { details: { problems: { turn: number; message: string }[] } };
    };
    expect(error.details.problems).toMatchObject([
      { turn: 3, message: expect.stringContaining('the limit is 150,000 bytes') },
    ]);

    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[2]!]: { withheld: true } } },
    });
    expect(res.status).toBe(200);
    const { uri } = (await res.json()) as { uri: string };
    const found = await sessionRecords(local.app.running.localnet!.pdsUrl, alice.did, uri);
    const texts = [...found.values()].map((r) => (r.value as { text?: string }).text);
    expect(texts).toContain(hindi);
    await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
  }, 60_000);

  it('a reply left streaming by a server that died does not block publishing', async () => {
    const { conversationId } = await insertConversation(local.app.db.sql, alice.playerId, {
      turns: [
        { role: 'player', parts: [{ type: 'text', text: 'Hello?' }] },
        { role: 'npc', parts: [{ type: 'text', text: 'Half an ans' }] },
      ],
    });
    // The reply's server (instance 1, never registered here) is gone; a live server's would be refused.
    await local.app.db.sql`update messages set status = 'streaming', instance_id = 1
      where conversation_id = ${conversationId} and role = 'npc'`;
    const res = await api(`/api/conversations/${conversationId}/publication/preview`, { body: {} });
    expect(res.status).toBe(200);
    const [reply] = await local.app.db.sql`select status from messages
      where conversation_id = ${conversationId} and role = 'npc'`;
    expect(reply!.status).toBe('interrupted');
    // The control: a reply a live server is writing still refuses.
    await local.app.db
      .sql`update messages set status = 'streaming', instance_id = ${local.app.running.instanceId}
      where conversation_id = ${conversationId} and role = 'npc'`;
    const busy = await api(`/api/conversations/${conversationId}/publication/preview`, { body: {} });
    expect(busy.status).toBe(409);
  }, 60_000);
});
