import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';

// What a turn sends to PostgreSQL (issue 32): every statement is CPU on both sides of a busy two-core machine.
// An NPC with no grant reads no grants, one with no lorebook reads no lorebooks (the turn's NPC read says both), and
// the claim's release carries live publishing's end-of-turn dating, both in the statement that stores the last reply.
let app: TestApp;
let cookie: string;
let statements: string[] | undefined;

beforeAll(async () => {
  app = await startTestApp({}, {}, { onQuery: (q) => statements?.push(q) });
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

async function turnOf(body: Record<string, unknown>, lorebookId?: string) {
  const npc = await app.api('/api/npcs', { cookie, body: { name: 'Ada', ...body } });
  const { npc: made } = (await npc.json()) as { npc: { id: string } };
  if (lorebookId) {
    const put = await app.api(`/api/npcs/${made.id}/lorebooks`, {
      cookie,
      method: 'PUT',
      body: { lorebookIds: [lorebookId] },
    });
    expect(put.status).toBe(200);
  }
  const c = await app.api('/api/conversations', { cookie, body: { npcIds: [made.id] } });
  const { conversation } = (await c.json()) as { conversation: { id: string } };
  app.fake.enqueue(textScript('Hello.', { prompt_tokens: 3, completion_tokens: 1 }));
  statements = [];
  const res = await app.api(`/api/conversations/${conversation.id}/messages`, {
    cookie,
    body: { text: 'Hi, what do the ledgers say?' },
  });
  const frames = await collectFrames(res);
  const sent = statements;
  statements = undefined;
  expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
  const request = app.fake.requests.at(-1)!.body as { tools?: unknown[]; messages: unknown[] };
  return { sent, tools: request.tools ?? [], prompt: JSON.stringify(request.messages) };
}

const readsGrants = (s: string) => /from grants\s+where npc_id/.test(s);

it('an NPC with no grant reads no grants; one with a grant reads them and gets its Tools', async () => {
  const plain = await turnOf({});
  expect(plain.sent.filter(readsGrants)).toEqual([]);
  expect(plain.tools).toEqual([]);

  const granted = await turnOf({ grants: [{ kind: 'memory' }] });
  expect(granted.sent.filter(readsGrants)).toHaveLength(1);
  expect(granted.tools.length).toBeGreaterThan(0);
});

const readsBooks = (s: string) => /from npc_lorebooks n join lorebooks/.test(s);

it('an NPC with no lorebook reads none; one with a lorebook reads them, and its entry reaches the prompt', async () => {
  const plain = await turnOf({});
  expect(plain.sent.filter(readsBooks)).toEqual([]);
  expect(plain.prompt).not.toContain('LORE-LEDGER');

  const wi = {
    entries: {
      '0': { uid: 0, key: ['ledgers'], content: 'LORE-LEDGER: kept in the crypt.', order: 100, position: 0 },
    },
  };
  const imported = await fetch(`${app.url}/api/lorebooks/import?name=Abbey`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body: JSON.stringify(wi),
  });
  expect(imported.status).toBe(201);
  const { lorebook } = (await imported.json()) as { lorebook: { id: string } };
  const booked = await turnOf({}, lorebook.id);
  expect(booked.sent.filter(readsBooks)).toHaveLength(1);
  expect(booked.prompt).toContain('LORE-LEDGER');
});

it('the claim is released in the statement that stores the last reply and dates the turn’s end for live publishing', async () => {
  const { sent } = await turnOf({});
  const release = sent.filter((s) => /update conversations set turn_owner = null/.test(s));
  expect(release).toHaveLength(1);
  expect(release[0]).toMatch(/^\s*with done as \(\s*update messages set parts/);
  expect(release[0]).toMatch(/told as \(update publications set live_due_at/);
  expect(sent.filter((s) => /^\s*update publications set live_due_at = now\(\)/.test(s))).toEqual([]);
});
