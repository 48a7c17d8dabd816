import { AtpAgent } from '@atproto/api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TurnChoice } from '../../src/redaction/index.ts';
import { insertConversation, type TurnRow } from '../support/conversations.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';

/**
 * Publishing reveals only what the Player chose: checked on every byte the server sends out while publishing —
 * request URLs and bodies, through the OAuth session's fetch and every other fetch of the process — over
 * generated Conversations and choices.
 */

interface Sent {
  url: string;
  body: string;
}
const sent: Sent[] = [];
let capturing = false;
let appOrigin = '';

async function record(input: Parameters<typeof fetch>[0], init?: RequestInit) {
  const req = new Request(input, init);
  if (capturing && new URL(req.url).origin !== appOrigin) {
    sent.push({ url: req.url, body: req.body ? await req.clone().text() : '' });
  }
  return req;
}
const oauthFetch: typeof fetch = async (input, init) => fetch(await record(input, init));

let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };
let postLink: string;
const realFetch = globalThis.fetch;

beforeAll(async () => {
  local = await startLocalApp({ oauthFetch });
  appOrigin = new URL(local.app.running.listenUrl).origin;
  // Every other request the process makes (DID and record resolution) is seen too.
  globalThis.fetch = async (input, init) => realFetch(await record(input, init));
  alice = await local.signInAs('alice.test');
  const bob = local.app.running.localnet!.accounts.find((a) => a.handle === 'bob.test')!;
  const agent = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
  await agent.login({ identifier: bob.handle, password: bob.password });
  const post = await agent.post({ text: 'A post to point at', createdAt: new Date().toISOString() });
  postLink = `https://bsky.app/profile/bob.test/post/${post.uri.split('/').pop()}`;
}, 120_000);
afterAll(async () => {
  globalThis.fetch = realFetch;
  await local?.close();
});

/** Every string a request carried, decoded: the URL (percent-decoded) and each string of a JSON body. */
function sentStrings(requests: Sent[]): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) {
        out.push(k);
        walk(x);
      }
  };
  for (const r of requests) {
    out.push(r.url, safeDecode(r.url), r.body);
    try {
      walk(JSON.parse(r.body));
    } catch {
      // not JSON: the raw body above is what was sent
    }
  }
  return out.map((s) => s.toLowerCase().replace(/\s+/g, ' '));
}
const safeDecode = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

// Text words and private words are distinctive (7 letters after a prefix no record, DID, CID or TID holds),
// so finding one in a request means it was sent, not that it turned up by chance.
const textWord = fc.stringMatching(/^[a-z]{5}$/).map((w) => `zq${w}`);
const privateWord = fc.stringMatching(/^[a-z]{5}$/).map((w) => `zx${w}`);
const cased = (w: string, how: number) =>
  how === 0 ? w : how === 1 ? w.toUpperCase() : w[0]!.toUpperCase() + w.slice(1);

const turnGen = fc.record({
  words: fc.array(fc.tuple(textWord, fc.nat(2)), { minLength: 2, maxLength: 10 }),
  sep: fc.constantFrom(' ', ', ', '\n', '. '),
  extra: fc.constantFrom('', '', ' @bob.test', ' see LINK'),
  tools: fc.array(
    fc.record({
      name: fc.constantFrom('bash', 'remember', 'load_skill', 'message_npc', 'srv__lookup', 'search'),
      arg: privateWord,
      out: privateWord,
      failed: fc.boolean(),
      summary: fc.option(fc.array(textWord, { minLength: 1, maxLength: 3 }), { nil: null }),
    }),
    { maxLength: 2 },
  ),
  reasoning: fc.option(privateWord, { nil: null }),
  withheld: fc.boolean(),
  // Redactions cover whole runs of words: [first word, how many].
  redact: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 2 }), fc.boolean()), { maxLength: 2 }),
  mention: fc.boolean(),
  // A Player turn's attachments: their names, pages and ids are private; the Player may describe them.
  attachment: fc.option(
    fc.record({
      name: privateWord,
      note: fc.option(fc.array(textWord, { minLength: 1, maxLength: 2 }), { nil: null }),
      coverInNote: fc.boolean(),
    }),
    { nil: null },
  ),
});
const caseGen = fc.record({
  turns: fc.array(turnGen, { minLength: 1, maxLength: 6 }),
  title: fc.option(fc.array(textWord, { minLength: 1, maxLength: 4 }), { nil: null }),
  emptyTitle: fc.boolean(),
  description: fc.array(textWord, { maxLength: 3 }),
});
type Case = typeof caseGen extends fc.Arbitrary<infer T> ? T : never;

/** The stored turns, the Player's choices, and what must never be sent: covered words, withheld-only words. */
function build(c: Case) {
  const rows: TurnRow[] = [];
  const choices: TurnChoice[] = [];
  const covered = new Set<string>();
  const published: string[] = [...c.description, ...(c.title ?? [])];
  const withheldWords: string[] = [];
  const privateWords: string[] = [];
  /** Words of published attachment descriptions: the control that descriptions are sent at all. */
  const notes: string[] = [];
  for (const [i, t] of c.turns.entries()) {
    const words = t.words.map(([w, how]) => cased(w, how));
    const starts: number[] = [];
    let text = '';
    for (const [k, w] of words.entries()) {
      if (k) text += t.sep;
      starts.push(text.length);
      text += w;
    }
    text += t.extra.replace('LINK', postLink);
    const choice: TurnChoice = {};
    const redactions = t.redact.map(([at, n, withSep]) => {
      const first = at % words.length;
      const last = Math.min(first + n, words.length) - 1;
      const end = starts[last]! + words[last]!.length;
      const run = text.slice(starts[first]!, end);
      covered.add(run.toLowerCase().replace(/\s+/g, ' '));
      // Sometimes the selection takes the separator after it as well.
      return { start: starts[first]!, end: withSep ? Math.min(end + 1, text.length) : end };
    });
    if (redactions.length) choice.redactions = redactions;
    if (t.withheld) choice.withheld = true;
    const role = i % 2 ? 'npc' : 'player';
    const parts: unknown[] = [];
    if (role === 'npc') {
      if (t.reasoning) {
        parts.push({ type: 'reasoning', text: t.reasoning });
        privateWords.push(t.reasoning);
      }
      for (const [k, tool] of t.tools.entries()) {
        parts.push({
          type: 'tool',
          id: `c${k}`,
          name: tool.name,
          ...(tool.name === 'srv__lookup' ? { description: `Looks things up ${words[0]}` } : {}),
          input: { text: `${tool.arg} ${words[0]}`, npc: tool.arg, name: tool.arg },
          state: tool.failed ? 'failed' : 'done',
          output: { result: tool.out },
        });
        privateWords.push(tool.arg, tool.out);
      }
      const summaries = t.tools.map((tool) => (tool.summary ? tool.summary.join(' ') : null));
      if (summaries.some(Boolean)) choice.steps = summaries;
      if (!t.withheld) for (const s of summaries) if (s) published.push(...s.split(' '));
    } else {
      if (t.mention) choice.mentions = ['@bob.test'];
      if (t.attachment) {
        const a = t.attachment;
        parts.push(
          { type: 'file', id: crypto.randomUUID(), name: `${a.name}.png`, mediaType: 'image/png', size: 10 },
          {
            type: 'url',
            id: crypto.randomUUID(),
            url: `https://example.com/${a.name}`,
            title: a.name,
            size: 5,
          },
        );
        privateWords.push(a.name);
        if (a.note) {
          // The description may repeat words the Player covered: they are covered there too.
          const run = redactions[0] ? text.slice(redactions[0].start, redactions[0].end).trim() : '';
          choice.attachmentNote = [...a.note, ...(a.coverInNote && run ? [run] : [])].join(' ');
          if (!t.withheld) {
            published.push(...a.note);
            notes.push(...a.note);
          }
        }
      }
    }
    parts.push({ type: 'text', text });
    (t.withheld ? withheldWords : published).push(...words.map((w) => w.toLowerCase()));
    rows.push({ role, parts });
    choices.push(choice);
  }
  const shown = new Set(published.map((w) => w.toLowerCase()));
  const title = c.title ? c.title.join(' ') : c.emptyTitle ? '' : undefined;
  return {
    rows,
    choices,
    title,
    covered: [...covered],
    withheldOnly: withheldWords.filter((w) => !shown.has(w)),
    privateWords,
    // A description word inside a covered run may be covered there: only the others must be seen.
    notes: notes.filter((w) => ![...covered].some((run) => run.includes(w.toLowerCase()))),
  };
}

describe('what leaves the server when a Player publishes', () => {
  it('no covered word, no withheld turn’s own words, no private Part ever reaches the network', async () => {
    let published = 0;
    await fc.assert(
      fc.asyncProperty(caseGen, async (c) => {
        const b = build(c);
        const { conversationId, ids } = await insertConversation(local.app.db.sql, alice.playerId, {
          turns: b.rows,
          title: c.turns.map((t) => t.words.map(([w]) => w).join(' ')).join(' '),
          npc: { name: 'Ada', description: c.description.join(' '), prompt: 'zxsystemprompt' },
        });
        sent.length = 0;
        capturing = true;
        const res = await local.app.api(`/api/conversations/${conversationId}/publication`, {
          method: 'PUT',
          cookie: alice.cookie,
          body: {
            ...(b.title === undefined ? {} : { title: b.title }),
            choices: Object.fromEntries(ids.map((id, i) => [id, b.choices[i]!])),
          },
        });
        capturing = false;
        expect(res.status, await res.clone().text()).toBe(200);
        // The control: the records were sent, and were seen here.
        expect(sent.some((r) => r.url.includes('com.atproto.repo.applyWrites'))).toBe(true);
        published++;
        const strings = sentStrings(sent);
        const leaked = (word: string) => strings.some((s) => s.includes(word));
        for (const w of b.covered) expect(leaked(w), `covered “${w}” was sent`).toBe(false);
        for (const w of b.withheldOnly) expect(leaked(w), `withheld “${w}” was sent`).toBe(false);
        for (const w of [...b.privateWords, 'zxsystemprompt'])
          expect(leaked(w), `private “${w}” was sent`).toBe(false);
        for (const w of b.notes)
          expect(leaked(w.toLowerCase()), `description “${w}” was not sent`).toBe(true);
      }),
      { numRuns: 200, endOnFailure: true },
    );
    expect(published).toBe(200);
  }, 600_000);
});

describe('a covered word stays covered wherever the thread is read', () => {
  const first = 'My codename is PELICAN-7731, keep it between us.';
  const at = first.indexOf('PELICAN');
  const secrets = /pelican|lisbon|zxsystem/i;

  it('in the PDS, the reader API, the thread page and its OpenGraph tags, getThread, listSessions and the index; and again after unpublish and publish', async () => {
    const sql = local.app.db.sql;
    const { conversationId, ids } = await insertConversation(sql, alice.playerId, {
      title: first,
      npc: { name: 'Ada', description: 'Knows all about pelican-7731.', prompt: 'zxsystemprompt' },
      turns: [
        { role: 'player', parts: [{ type: 'text', text: first }] },
        {
          role: 'npc',
          parts: [
            {
              type: 'tool',
              id: 'r',
              name: 'remember',
              input: { text: 'codename PELICAN-7731' },
              state: 'done',
            },
            { type: 'text', text: 'Noted: Pelican-7731 is safe with me.' },
          ],
        },
        { role: 'player', parts: [{ type: 'text', text: 'Between us, the launch is in Lisbon.' }] },
        { role: 'npc', parts: [{ type: 'text', text: 'Fine.' }] },
      ],
    });
    const choices = {
      [ids[0]!]: { redactions: [{ start: at, end: at + 'PELICAN-7731'.length }] },
      [ids[2]!]: { withheld: true },
    };
    const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
      local.app.api(path, { ...init, cookie: alice.cookie });
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices },
    });
    expect(res.status).toBe(200);
    const { uri } = (await res.json()) as { uri: string };
    const rkey = uri.split('/').pop()!;

    const surfaces = async () => {
      const agent = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
      const list = async (collection: string) =>
        (await agent.com.atproto.repo.listRecords({ repo: alice.did, collection, limit: 100 })).data.records;
      const get = async (path: string) => (await fetch(`${local.app.running.listenUrl}${path}`)).text();
      return {
        pds: JSON.stringify([
          ...(await list('click.aligned.chat.session')).filter((r) => r.uri === uri),
          ...(await list('click.aligned.chat.message')).filter(
            (r) => (r.value as { session: string }).session === uri,
          ),
        ]),
        reader: await get(`/api/reader/threads/alice.test/${rkey}`),
        page: await get(`/profile/alice.test/thread/${rkey}`),
        getThread: await get(`/xrpc/click.aligned.chat.getThread?uri=${encodeURIComponent(uri)}`),
        listMine: await get('/xrpc/click.aligned.chat.listSessions?actor=alice.test'),
        listAll: await get('/xrpc/click.aligned.chat.listSessions'),
        index: JSON.stringify(
          await sql`select to_jsonb(s) as row from index_sessions s where uri = ${uri}
            union all select to_jsonb(m) from index_messages m where session_uri = ${uri}`,
        ),
      };
    };
    const check = async () => {
      const seen = await surfaces();
      for (const [where, body] of Object.entries(seen)) {
        expect(body, where).not.toMatch(secrets);
        // The control: each surface does show the thread.
        if (where !== 'listAll' && where !== 'listMine') expect(body, where).toContain('████████');
      }
      expect(seen.page).toMatch(
        /<meta property="og:title" content="My codename is ████████, keep it between us\.">/,
      );
      expect(seen.listMine).toContain('My codename is ████████');
      return seen;
    };
    await check();

    // Unpublish keeps the choices as the draft; publishing again (choosing nothing anew) restores the link.
    expect((await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' })).status).toBe(
      204,
    );
    const kept = (await (await api(`/api/conversations/${conversationId}/publication`)).json()) as {
      publication: unknown;
      draft: { choices: unknown; title: string | null };
    };
    expect(kept.publication).toBeNull();
    expect(kept.draft).toEqual({ title: null, choices, agents: {}, removedWords: [] });
    const again = await api(`/api/conversations/${conversationId}/publication`, { method: 'PUT', body: {} });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { uri: string }).uri).toBe(uri);
    const seen = await check();
    expect(seen.pds).toContain('"withheld":true');
  }, 120_000);
});
