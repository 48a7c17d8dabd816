import { AtpAgent } from '@atproto/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveCover } from '../../src/publish/store.ts';
import { insertConversation } from '../support/conversations.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { sessionRecords } from '../support/publication.ts';

/**
 * Covering words in a published Conversation is not held up by anything else a publish refuses (ADR 0090): the
 * words leave the PDS and the index at once, and nothing else the refused request asked for goes out.
 */

let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };
let bob: AtpAgent;
/** Writes to the PDS counted; `failNext` has the PDS refuse the next one (counted in `failed`). */
const writes = { applyWrites: 0, failNext: false, failed: 0 };
const countingFetch: typeof fetch = async (input, init) => {
  const req = new Request(input, init);
  if (req.url.includes('com.atproto.repo.applyWrites')) {
    writes.applyWrites++;
    if (writes.failNext) {
      writes.failNext = false;
      writes.failed++;
      return Response.json({ error: 'InvalidRequest', message: 'injected refusal' }, { status: 400 });
    }
  }
  return fetch(req);
};

beforeAll(async () => {
  local = await startLocalApp({ oauthFetch: countingFetch });
  alice = await local.signInAs('alice.test');
  const account = local.app.running.localnet!.accounts.find((a) => a.handle === 'bob.test')!;
  bob = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
  await bob.login({ identifier: account.handle, password: account.password });
}, 120_000);
afterAll(() => local?.close());

const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
  local.app.api(path, { ...init, cookie: alice.cookie });

/** Every surface the thread is read on: the PDS, our index, the reader API. */
async function everywhere(conversationId: string) {
  const sql = local.app.db.sql;
  const [pub] =
    await sql`select did, session_rkey from publications where conversation_id = ${conversationId}`;
  const uri = `at://${pub!.did}/click.aligned.chat.session/${pub!.session_rkey}`;
  const pds = await sessionRecords(local.app.running.localnet!.pdsUrl, alice.did, uri);
  const index = await sql`select to_jsonb(s) as row from index_sessions s where uri = ${uri}
    union all select to_jsonb(m) from index_messages m where session_uri = ${uri}`;
  const reader = await (
    await fetch(`${local.app.running.listenUrl}/api/reader/threads/alice.test/${pub!.session_rkey}`)
  ).text();
  const messages = [...pds.entries()]
    .filter(([k]) => k.startsWith('click.aligned.chat.message/'))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([, r]) => r.value as { text?: string; withheld?: boolean; refs?: unknown[]; createdAt?: string });
  return { all: JSON.stringify([[...pds.values()], index, reader]), messages };
}

/** A Conversation of a question and its reply, published as it is. */
async function published(question: string, reply: string) {
  const made = await insertConversation(local.app.db.sql, alice.playerId, {
    turns: [
      { role: 'player', parts: [{ type: 'text', text: question }] },
      { role: 'npc', parts: [{ type: 'text', text: reply }] },
    ],
  });
  const res = await api(`/api/conversations/${made.conversationId}/publication`, { method: 'PUT', body: {} });
  expect(res.status).toBe(200);
  return made;
}

const spanOf = (text: string, word: string) => {
  const start = text.indexOf(word);
  return { start, end: start + word.length };
};

describe('covering words in a published Conversation', () => {
  it('goes out though the publish is refused for a deleted post, makes a turn the bars overfill a hole, and keeps covering', async () => {
    const post = await bob.post({ text: 'The map room', createdAt: new Date().toISOString() });
    const link = `https://bsky.app/profile/bob.test/post/${post.uri.split('/').pop()}`;
    const reply = 'Zephyr keeps the maps in the east wing.';
    const long = 'Zephyr '.repeat(2_140).trim();
    const { conversationId, ids } = await insertConversation(local.app.db.sql, alice.playerId, {
      turns: [
        { role: 'player', parts: [{ type: 'text', text: `Does Zephyr keep ${link}?` }] },
        { role: 'npc', parts: [{ type: 'text', text: reply }] },
        { role: 'player', parts: [{ type: 'text', text: 'Say his name many times.' }] },
        { role: 'npc', parts: [{ type: 'text', text: long }] },
      ],
    });
    const first = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} });
    expect(first.status).toBe(200);
    expect((await everywhere(conversationId)).all).toMatch(/zephyr/i);

    // The post the first turn links to is deleted: publishing anything now is refused (UNRESOLVED_REF).
    await bob.deletePost(post.uri);
    const before = writes.applyWrites;
    const choices = { [ids[1]!]: { redactions: [spanOf(reply, 'Zephyr')] }, [ids[2]!]: { withheld: true } };
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices },
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as {
      error: {
        code: string;
        message: string;
        details: { problems: { code: string; turn: number }[]; covered: unknown };
      };
    };
    expect(error.code).toBe('PUBLISH_PROBLEMS');
    // The plan with the new cover is refused for the deleted post, and for turn 4 that its bars make too long.
    expect(error.details.problems.map((p) => [p.code, p.turn])).toEqual([
      ['UNRESOLVED_REF', 1],
      ['TEXT_TOO_LONG', 4],
    ]);
    // The title (made from turn 1) and turns 1, 2 and 4 showed the word; 4, with its bars, is longer than a record
    // may be. Turn 3, which the request withholds, is a hole at once too (ADR 0094).
    expect(error.details.covered).toEqual({
      records: 5,
      holes: [4],
      held: [3],
      covering: true,
      withheld: [ids[2], ids[3]],
      written: true,
      tooMany: 0,
    });
    expect(error.message).toMatch(/covered already in what was published: 5 records rewritten/);
    expect(error.message).toMatch(/Turn 3, which you just withheld, is a hole there too/);
    expect(writes.applyWrites).toBeGreaterThan(before);

    const after = await everywhere(conversationId);
    expect(after.all).not.toMatch(/zephyr/i);
    expect(after.messages[1]!.text).toBe('████████ keeps the maps in the east wing.');
    expect(after.messages[3]).toMatchObject({ withheld: true });
    expect(after.messages[3]!.text).toBeUndefined();
    // Turn 3 is a hole; nothing else the refused request asked for went out. Turn 1, rewritten, lost the link it
    // was published with: what it leads to may show the words covered now, and nothing is looked up (ADR 0108).
    expect(after.messages[2]).toMatchObject({ withheld: true });
    expect(after.messages[2]!.text).toBeUndefined();
    // Both holes as the next publish plans them: the time of turn 2, the last one published before them.
    expect(after.messages[2]!.createdAt).toBe(after.messages[1]!.createdAt);
    expect(after.messages[3]!.createdAt).toBe(after.messages[1]!.createdAt);
    expect(after.messages[0]!.text).toBe(`Does ████████ keep ${link}?`);
    expect(after.messages[0]!.refs).toBeUndefined();
    const { publication, draft } = (await (
      await api(`/api/conversations/${conversationId}/publication`)
    ).json()) as {
      publication: { status: string };
      draft: { choices: Record<string, unknown> };
    };
    expect(publication.status).toBe('published');
    // Turns 3 and 4, holes on the PDS, are withheld in the draft too: the next publish plans the holes that are out.
    expect(draft.choices).toEqual({
      [ids[1]!]: choices[ids[1]!],
      [ids[2]!]: { withheld: true },
      [ids[3]!]: { withheld: true },
    });

    // Published again with the link withheld and naming no redaction: the draft's still covers, and holds turn 4.
    const again = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[0]!]: { withheld: true } } },
    });
    expect(again.status).toBe(200);
    expect((await everywhere(conversationId)).all).not.toMatch(/zephyr/i);
  }, 120_000);

  it('goes out while a reply is still being written, and a request that covers nothing new writes nothing', async () => {
    const text = 'Meet me at Halvard Quay at nine.';
    const { conversationId, ids } = await published(text, 'Halvard Quay it is.');
    // The reply is being written again, by this (live) server.
    await local.app.db
      .sql`update messages set status = 'streaming', instance_id = ${local.app.running.instanceId}
      where id = ${ids[1]!}`;
    const cover = { [ids[0]!]: { redactions: [spanOf(text, 'Halvard Quay')] } };
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: cover },
    });
    expect(res.status).toBe(409);
    const { error } = (await res.json()) as { error: { code: string; details: { covered: unknown } } };
    expect(error.code).toBe('TURN_IN_PROGRESS');
    // The title (made from the first turn), both turns.
    expect(error.details.covered).toEqual({
      records: 3,
      holes: [],
      held: [],
      covering: true,
      withheld: [],
      written: true,
      tooMany: 0,
    });
    const seen = await everywhere(conversationId);
    expect(seen.all).not.toMatch(/halvard/i);
    expect(seen.messages.map((m) => m.text)).toEqual(['Meet me at ████████ at nine.', '████████ it is.']);

    // The same again: nothing new to cover, nothing written, the refusal as it was.
    const before = writes.applyWrites;
    const same = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: cover },
    });
    expect(same.status).toBe(409);
    expect(((await same.json()) as { error: { details?: unknown } }).error.details).toBeUndefined();
    expect(writes.applyWrites).toBe(before);
  }, 120_000);

  it('a cover whose writes fail is said to have failed, and publishing again, refused or not, finishes it', async () => {
    const text = 'Ask Orsolya at the gate.';
    const { conversationId, ids } = await published(text, 'I will.');
    // Refused for a mention that resolves to no one; the PDS refuses the cover's write.
    const body = {
      choices: { [ids[0]!]: { redactions: [spanOf(text, 'Orsolya')], mentions: ['@nobody.test'] } },
    };
    writes.failNext = true;
    const failed = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body });
    expect(writes.failed).toBe(1);
    expect(failed.status).toBe(400);
    const first = (await failed.json()) as { error: { message: string; details: { covered: unknown } } };
    expect(first.error.details.covered).toEqual({
      records: 2,
      holes: [],
      held: [],
      covering: true,
      withheld: [],
      written: false,
      tooMany: 0,
    });
    expect(first.error.message).toMatch(/could not be brought up to date/);
    expect((await everywhere(conversationId)).all).toMatch(/orsolya/i);
    const state = (await (await api(`/api/conversations/${conversationId}/publication`)).json()) as {
      publication: { status: string };
    };
    expect(state.publication.status).toBe('failed');

    // Again, as the page says: still refused, nothing new to cover, and what was left unwritten goes out.
    const again = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body });
    expect(again.status).toBe(400);
    const second = (await again.json()) as { error: { message: string; details: { covered?: unknown } } };
    expect(second.error.details.covered).toBeUndefined();
    expect(second.error.message).toMatch(/left unwritten is written now/);
    expect((await everywhere(conversationId)).all).not.toMatch(/orsolya/i);
    const after = (await (await api(`/api/conversations/${conversationId}/publication`)).json()) as {
      publication: { status: string };
    };
    expect(after.publication.status).toBe('published');
  }, 120_000);

  it('a cover whose writes failed is written by the next publish that succeeds, though its plan is unchanged', async () => {
    const text = 'Ask Orsolya at the gate.';
    const { conversationId, ids } = await published(text, 'I will.');
    const cover = { redactions: [spanOf(text, 'Orsolya')] };
    writes.failNext = true;
    const failed = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[0]!]: { ...cover, mentions: ['@nobody.test'] } } },
    });
    expect(failed.status).toBe(400);
    expect((await everywhere(conversationId)).all).toMatch(/orsolya/i);
    // The mention taken out: the plan now equals the stored records, whose writes are still owed.
    const ok = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[0]!]: cover } },
    });
    expect(ok.status).toBe(200);
    expect((await everywhere(conversationId)).all).not.toMatch(/orsolya/i);
  }, 120_000);

  it('stores the added redactions into the draft as it stands: a hold-back marked meanwhile is kept', async () => {
    const sql = local.app.db.sql;
    const { conversationId, ids } = await published('Hello Quinn.', 'Hello.');
    // Marked withheld by a hold-back (outside the publication's lease) after covering read the draft.
    await sql`update publication_drafts set choices = choices || ${sql.json({ [ids[0]!]: { withheld: true } })}
      where conversation_id = ${conversationId}`;
    const redactions = [{ start: 6, end: 11 }];
    await saveCover(sql, conversationId, {
      redactions: { [ids[0]!]: redactions },
      words: { [ids[0]!]: ['Quinn'] },
      records: [],
      stale: [],
      // A turn the cover made a hole: withheld in the draft, its other choices kept.
      withheld: [ids[1]!],
    });
    const [draft] =
      await sql`select choices, words from publication_drafts where conversation_id = ${conversationId}`;
    expect(draft!.choices).toEqual({
      [ids[0]!]: { withheld: true, redactions },
      [ids[1]!]: { withheld: true },
    });
    expect(draft!.words).toEqual({ [ids[0]!]: ['Quinn'] });
  }, 60_000);
});

describe('withholding a turn of a published Conversation (ADR 0094)', () => {
  it('goes out though the publish is refused: the turn is a hole everywhere, and nothing else asked for goes out', async () => {
    const { conversationId, ids } = await published('What is the code?', 'Sable Ward opens the gate.');
    // The reply changed since it was published (drift): it still goes as a hole, not as it stands.
    const edited = 'Sable Ward opens the east gate.';
    await local.app.db
      .sql`update messages set parts = ${local.app.db.sql.json([{ type: 'text', text: edited }])},
      text = ${edited} where id = ${ids[1]!}`;
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[1]!]: { withheld: true }, [ids[0]!]: { mentions: ['@nobody.test'] } } },
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as {
      error: { code: string; message: string; details: { covered: Record<string, unknown> } };
    };
    expect(error.code).toBe('PUBLISH_PROBLEMS');
    expect(error.details.covered).toMatchObject({
      holes: [],
      held: [2],
      covering: false,
      withheld: [ids[1]],
      written: true,
    });
    expect(error.message).toMatch(/Turn 2, which you just withheld, is a hole already in what was published/);
    const seen = await everywhere(conversationId);
    expect(seen.all).not.toMatch(/sable/i);
    expect(seen.messages.map((m) => [m.text ?? null, m.withheld ?? false])).toEqual([
      ['What is the code?', false],
      [null, true],
    ]);
    // The mention the refused request added did not go out.
    expect(seen.all).not.toMatch(/nobody/);
    const [draft] = await local.app.db
      .sql`select choices from publication_drafts where conversation_id = ${conversationId}`;
    expect(draft!.choices[ids[1]!]).toMatchObject({ withheld: true });
    // The hole out is the one a publish plans: its time is the turn's before it, not the reply's own, and the
    // publish page's preview owes it no write ("unchanged").
    expect(seen.messages[1]!.createdAt).toBe(seen.messages[0]!.createdAt);
    const preview = (await (
      await api(`/api/conversations/${conversationId}/publication/preview`, {
        body: { choices: { [ids[1]!]: { withheld: true } } },
      })
    ).json()) as { records: { messageId: string | null; write: string | null }[] };
    expect(preview.records.find((r) => r.messageId === ids[1])?.write).toBeNull();
  }, 120_000);

  it('an earlier write still owed a turn’s text: a refused publish that withholds it writes its hole instead', async () => {
    const question = 'Meet me at the Quay.';
    const made = await insertConversation(local.app.db.sql, alice.playerId, {
      turns: [
        { role: 'player', parts: [{ type: 'text', text: question }] },
        { role: 'npc', parts: [{ type: 'text', text: 'Sable Ward opens the gate.' }] },
      ],
    });
    const { conversationId, ids } = made;
    // The first publish's write fails: every record is owed, none out.
    writes.failNext = true;
    await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} });
    expect(writes.failed).toBeGreaterThan(0);
    const owed = await local.app.db.sql`select count(*)::int as n from publication_records
      where conversation_id = ${conversationId} and pending = 'create'`;
    expect(owed[0]!.n).toBe(3);
    // Refused (a mention of no one), covering a word and withholding the reply: what is owed goes out, the reply
    // as a hole. Before ADR 0094, the reply's owed text went out with the cover.
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: {
        choices: {
          [ids[0]!]: { redactions: [spanOf(question, 'Quay')], mentions: ['@nobody.test'] },
          [ids[1]!]: { withheld: true },
        },
      },
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { details: { covered: Record<string, unknown> } } };
    expect(error.details.covered).toMatchObject({ held: [2], covering: true, written: true });
    const seen = await everywhere(conversationId);
    expect(seen.all).not.toMatch(/sable|quay/i);
    expect(seen.messages.map((m) => [m.text ?? null, m.withheld ?? false])).toEqual([
      ['Meet me at the ████████.', false],
      [null, true],
    ]);
  }, 120_000);
});

describe('withholding at once: the title, and a reply regenerated since (ADR 0094)', () => {
  it('a first turn withheld takes the title it made with it: the session says none until a publish succeeds', async () => {
    const { conversationId, ids } = await published('Sable Ward: is that the code?', 'It is.');
    expect((await everywhere(conversationId)).all).toMatch(/sable/i);
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[0]!]: { withheld: true }, [ids[1]!]: { mentions: ['@nobody.test'] } } },
    });
    expect(res.status).toBe(400);
    const seen = await everywhere(conversationId);
    expect(seen.all).not.toMatch(/sable/i);
    // Not the next turn's words either: the Player may not have looked them over.
    expect(seen.all).toContain('Untitled conversation');
    expect(seen.messages.map((m) => [m.text ?? null, m.withheld ?? false])).toEqual([
      [null, true],
      ['It is.', false],
    ]);
  }, 120_000);

  it('a reply regenerated since the page was opened, its write still owed, is withheld as a hole', async () => {
    const sql = local.app.db.sql;
    const reply = 'Sable Ward opens the gate at the Quay.';
    const { conversationId, ids } = await published('What is the code?', reply);
    // A cover of "Quay" whose write failed: the reply's update, with "Sable Ward" still in it, is owed.
    writes.failNext = true;
    const failed = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: {
        choices: {
          [ids[1]!]: { redactions: [spanOf(reply, 'Quay')] },
          [ids[0]!]: { mentions: ['@nobody.test'] },
        },
      },
    });
    expect(failed.status).toBe(400);
    const [owed] = await sql`select pending from publication_records where message_id = ${ids[1]!}`;
    expect(owed!.pending).toBe('update');
    // The reply is regenerated: the old one leaves the path.
    await sql`update messages set on_path = false where id = ${ids[1]!}`;
    const [npc] = await sql`select npc_id from messages where id = ${ids[1]!}`;
    await sql`insert into messages (conversation_id, role, npc_id, npc_name, parts, text, parent_id)
      values (${conversationId}, 'npc', ${npc!.npc_id}, 'Ada', ${sql.json([{ type: 'text', text: 'Ask again later.' }])},
        'Ask again later.', ${ids[0]!})`;
    // The page, opened before (its path the old one), withholds the old reply: refused, the path having moved.
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[1]!]: { withheld: true } }, path: [ids[0]!, ids[1]!] },
    });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('CONVERSATION_CHANGED');
    const seen = await everywhere(conversationId);
    expect(seen.all).not.toMatch(/sable|quay/i);
    expect(seen.messages.map((m) => [m.text ?? null, m.withheld ?? false])).toEqual([
      ['What is the code?', false],
      [null, true],
    ]);
  }, 120_000);
});

describe('holes made at once (ADR 0096)', () => {
  it('go out as the next publish plans them: a hole already out after a new one moves its time back with it', async () => {
    const long = 'Zephyr '.repeat(2_140).trim();
    const { conversationId, ids } = await insertConversation(local.app.db.sql, alice.playerId, {
      turns: [
        { role: 'player', parts: [{ type: 'text', text: 'Say his name many times.' }] },
        { role: 'npc', parts: [{ type: 'text', text: long }] },
        { role: 'player', parts: [{ type: 'text', text: 'Keep this one to yourself.' }] },
        { role: 'npc', parts: [{ type: 'text', text: 'As you wish.' }] },
      ],
    });
    // Turn 3 is out as a hole, with the time of turn 2 (the last published before it).
    const first = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[2]!]: { withheld: true } } },
    });
    expect(first.status).toBe(200);
    const before = (await everywhere(conversationId)).messages;
    expect(before[2]).toMatchObject({ withheld: true, createdAt: before[1]!.createdAt });
    // Covering the name makes turn 2 too long (a hole at once), in a publish refused for a mention of no one.
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: {
        choices: {
          [ids[2]!]: { withheld: true },
          [ids[1]!]: { redactions: [spanOf(long, 'Zephyr')] },
          [ids[0]!]: { mentions: ['@nobody.test'] },
        },
      },
    });
    expect(res.status).toBe(400);
    const after = (await everywhere(conversationId)).messages;
    expect(after.map((m) => m.withheld ?? false)).toEqual([false, true, true, false]);
    // Both holes say the time of turn 1 now, as the next publish plans them: it owes them nothing.
    expect(after[1]!.createdAt).toBe(after[0]!.createdAt);
    expect(after[2]!.createdAt).toBe(after[0]!.createdAt);
    const [draft] = await local.app.db
      .sql`select choices from publication_drafts where conversation_id = ${conversationId}`;
    const preview = (await (
      await api(`/api/conversations/${conversationId}/publication/preview`, {
        body: { choices: draft!.choices },
      })
    ).json()) as { records: { messageId: string | null; write: string | null }[] };
    expect(preview.records.filter((r) => r.messageId !== null && r.write !== null)).toEqual([]);
  }, 120_000);
  it('a turn withheld again keeps of its hole what the request keeps, not what the draft kept before', async () => {
    const { conversationId, ids } = await published('What is the code?', 'Sable Ward opens the gate.');
    const put = (choices: Record<string, unknown>) =>
      api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: { choices } });
    // Withheld once showing its model, then released (the page keeps the box ticked): the draft keeps the model.
    expect((await put({ [ids[1]!]: { withheld: true, keepModel: true } })).status).toBe(200);
    expect((await put({ [ids[1]!]: { withheld: false, keepModel: true } })).status).toBe(200);
    // Withheld again in a refused publish, keeping its time and not its model.
    const res = await put({
      [ids[1]!]: { withheld: true, keepTime: true },
      [ids[0]!]: { mentions: ['@nobody.test'] },
    });
    expect(res.status).toBe(400);
    const seen = (await everywhere(conversationId)).messages;
    expect(seen[1]).toMatchObject({ withheld: true });
    expect(seen[1]!.createdAt).not.toBe(seen[0]!.createdAt);
    expect(seen[1]).not.toHaveProperty('model');
    const [draft] = await local.app.db
      .sql`select choices from publication_drafts where conversation_id = ${conversationId}`;
    expect(draft!.choices[ids[1]!]).toEqual({ withheld: true, keepTime: true });
  }, 120_000);

  it('a hole off the path, covered again at once, is not put back as it was stored', async () => {
    const sql = local.app.db.sql;
    const question = 'Is it fake-model or Zephyr?';
    const long = 'Zephyr '.repeat(2_140).trim();
    const { conversationId, ids } = await insertConversation(sql, alice.playerId, {
      turns: [
        { role: 'player', parts: [{ type: 'text', text: question }] },
        { role: 'npc', parts: [{ type: 'text', text: long }] },
        { role: 'player', parts: [{ type: 'text', text: 'Thanks.' }] },
        { role: 'npc', parts: [{ type: 'text', text: 'You are welcome.' }] },
      ],
    });
    // Turn 4 is out as a hole that names its model, as the Player chose.
    const first = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[3]!]: { withheld: true, keepModel: true } } },
    });
    expect(first.status).toBe(200);
    expect((await everywhere(conversationId)).messages[3]).toMatchObject({ model: 'fake/fake-model' });
    // Its reply is regenerated: the hole leaves the path, its record out until a publish deletes it.
    await sql`update messages set on_path = false where id = ${ids[3]!}`;
    const [npc] = await sql`select npc_id from messages where id = ${ids[3]!}`;
    await sql`insert into messages (conversation_id, role, npc_id, npc_name, parts, text, parent_id)
      values (${conversationId}, 'npc', ${npc!.npc_id}, 'Ada', ${sql.json([{ type: 'text', text: 'Again.' }])},
        'Again.', ${ids[2]!})`;
    // Covering the model's name (which the hole off the path shows) and the name turn 2 repeats (a new hole), in a
    // publish refused for a mention of no one.
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: {
        choices: {
          [ids[0]!]: { redactions: [spanOf(question, 'fake-model')], mentions: ['@nobody.test'] },
          [ids[1]!]: { redactions: [spanOf(long, 'Zephyr')] },
        },
      },
    });
    expect(res.status).toBe(400);
    const seen = await everywhere(conversationId);
    expect(seen.all).not.toMatch(/fake-model|zephyr/i);
    expect(seen.messages[3]).toMatchObject({ withheld: true });
  }, 120_000);
});

describe('links and mentions when words are covered at once', () => {
  it('go, all of them, until a publish looks them up again: what they lead to may show the words', async () => {
    const post = await bob.post({ text: 'Zephyr keeps the maps.', createdAt: new Date().toISOString() });
    const bobDid = bob.session!.did;
    const first = `Zephyr wrote ${post.uri}`;
    const second = 'Ask bob.test about it.';
    const { conversationId, ids } = await insertConversation(local.app.db.sql, alice.playerId, {
      turns: [
        { role: 'player', parts: [{ type: 'text', text: first }] },
        { role: 'npc', parts: [{ type: 'text', text: second }] },
      ],
    });
    const publish = (choices: object) =>
      api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: { choices } });
    expect((await publish({ [ids[0]!]: { mentions: [bobDid] } })).status).toBe(200);
    expect((await everywhere(conversationId)).messages[0]).toMatchObject({
      mentions: [bobDid],
      refs: [{ uri: post.uri }],
    });
    // Covering the name the post shows and bob's handle: refused (the link and the mention lead to them, ADR
    // 0108), and covered at once, links and mentions gone with the words.
    const covering = await publish({
      [ids[0]!]: { redactions: [spanOf(first, 'Zephyr')], mentions: [bobDid] },
      [ids[1]!]: { redactions: [spanOf(second, 'bob.test')] },
    });
    expect(covering.status).toBe(400);
    const refused = (await covering.json()) as {
      error: { details: { problems: { code: string }[]; covered: { records: number } } };
    };
    expect(refused.error.details.problems.map((p) => p.code)).toContain('COVERED_REFERENCE');
    const now = await everywhere(conversationId);
    expect(now.all).not.toMatch(/zephyr|bob\.test/i);
    expect(now.messages[0]).not.toHaveProperty('refs');
    expect(now.messages[0]).not.toHaveProperty('mentions');
    // Withholding alone covers no words: the links stay.
    const other = await published(`See ${post.uri}`, 'Fine.');
    const held = await api(`/api/conversations/${other.conversationId}/publication`, {
      method: 'PUT',
      body: {
        choices: { [other.ids[1]!]: { withheld: true }, [other.ids[0]!]: { mentions: ['@nobody.test'] } },
      },
    });
    expect(held.status).toBe(400);
    const heldOut = await everywhere(other.conversationId);
    expect(heldOut.messages[1]).toMatchObject({ withheld: true });
    expect(heldOut.messages[0]).toMatchObject({ refs: [{ uri: post.uri }] });
  }, 120_000);
});

describe('what the reader looks up beside a thread published from here', () => {
  // A linked record can change after it was published, and an account can take another handle: the reader covers
  // what it looks up with the Conversation's cover.
  it('is covered as the records are: a linked post’s text and a mentioned account’s handle', async () => {
    const bobDid = bob.session!.did;
    const made = await bob.com.atproto.repo.createRecord({
      repo: bobDid,
      collection: 'com.example.note',
      record: { $type: 'com.example.note', text: 'Maps, kept.' },
    });
    const rkeyOf = (uri: string) => uri.split('/').pop()!;
    const first = `Zephyr noted ${made.data.uri}`;
    const { conversationId, ids } = await insertConversation(local.app.db.sql, alice.playerId, {
      turns: [
        { role: 'player', parts: [{ type: 'text', text: first }] },
        { role: 'npc', parts: [{ type: 'text', text: 'Fine.' }] },
      ],
    });
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [ids[0]!]: { redactions: [spanOf(first, 'Zephyr')], mentions: [bobDid] } } },
    });
    expect(res.status).toBe(200);
    const rkey = rkeyOf(((await res.json()) as { uri: string }).uri);
    // Since: the note says the covered name, a long way in (its quote is cut at 1,000 characters after covering,
    // not before: a covered word across the cut would show its first half) …
    await bob.com.atproto.repo.putRecord({
      repo: bobDid,
      collection: 'com.example.note',
      rkey: rkeyOf(made.data.uri),
      record: { $type: 'com.example.note', text: `${'x'.repeat(995)} Zephyr and more.` },
    });
    // … and bob's handle spells it.
    await bob.com.atproto.identity.updateHandle({ handle: 'zephyr-bob.test' });
    try {
      const reader = await fetch(`${local.app.running.listenUrl}/api/reader/threads/alice.test/${rkey}`);
      const { thread } = (await reader.json()) as {
        thread: {
          messages: {
            refs: { text: string | null; state: string }[];
            mentions: { did: string; handle: string | null }[];
          }[];
        };
      };
      const quote = thread.messages[0]!.refs[0]!;
      expect(quote.state).toBe('changed');
      expect(quote.text).toHaveLength(1000);
      expect(quote.text!.endsWith(' ████')).toBe(true);
      expect(quote.text).not.toMatch(/zeph/i);
      expect(thread.messages[0]!.mentions).toEqual([{ did: bobDid, handle: null }]);
      const page = await (
        await fetch(`${local.app.running.listenUrl}/profile/alice.test/thread/${rkey}`)
      ).text();
      expect(page).toContain('noted');
      expect(page.toLowerCase()).not.toMatch(/zephyr/);
    } finally {
      await bob.com.atproto.identity.updateHandle({ handle: 'bob.test' });
    }
  }, 120_000);
});
