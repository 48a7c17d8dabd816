import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConversationCreated,
  ConversationListResponse,
  ConversationPage,
  ConversationResponse,
  GrantListResponse,
  ListSessionsResponse,
  McpServerListResponse,
  McpServerResponse,
  MemoryListResponse,
  MemoryResponse,
  MeResponse,
  MessagePage,
  ModelInfo,
  NpcListResponse,
  NpcResponse,
  PublicationResponse,
  SignInOptions,
  SkillListResponse,
  SkillResponse,
  StopResponse,
  UsageResponse,
  VillageView,
} from '../../src/wire/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';

let app: TestApp;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp();
  ({ cookie } = await app.signIn());
});
afterAll(() => app?.close());

/**
 * The answer fits its wire schema exactly: it decodes (as the web app decodes it), and encoding what was
 * decoded gives back the very same JSON — so the route sent no key the contract does not name (an owner's
 * id, the rolling summary) and every time is the ISO string the codec makes.
 */
async function expectContract<S extends z.ZodType>(res: Response, schema: S, status = 200) {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  const json = JSON.parse(text) as unknown;
  const decoded = z.decode(schema, json as z.input<S>);
  expect(JSON.parse(JSON.stringify(z.encode(schema, decoded)))).toEqual(json);
  return decoded;
}

it('every answer of the app’s API fits the contract the web app decodes with', async () => {
  await expectContract(await app.api('/api/me', { cookie }), MeResponse);
  await expectContract(await app.api('/api/auth/options'), SignInOptions);
  await expectContract(await app.api('/api/village', { cookie }), VillageView);
  await expectContract(await app.api('/api/models?provider=fake&model=fake-model', { cookie }), ModelInfo);

  const created = await expectContract(
    await app.api('/api/npcs', {
      cookie,
      body: { name: 'Wren', jobTitle: 'Cartographer', prompt: 'Be exact.' },
    }),
    NpcResponse,
    201,
  );
  expect(created.npc.createdAt).toBeInstanceOf(Date);
  const id = created.npc.id;
  await expectContract(await app.api(`/api/npcs/${id}`, { cookie }), NpcResponse);
  await expectContract(
    await app.api(`/api/npcs/${id}`, { cookie, method: 'PATCH', body: { jobTitle: 'Surveyor' } }),
    NpcResponse,
  );
  const listed = await expectContract(await app.api('/api/npcs', { cookie }), NpcListResponse);
  expect(listed.npcs.map((n) => n.jobTitle)).toContain('Surveyor');

  const conversation = await expectContract(
    await app.api('/api/conversations', { cookie, body: { npcIds: [id] } }),
    ConversationCreated,
    201,
  );
  const cid = conversation.conversation.id;
  app.fake.enqueue(textScript('Due north.'));
  const turn = await app.api(`/api/conversations/${cid}/messages`, { cookie, body: { text: 'Which way?' } });
  expect((await collectFrames(turn)).at(-1)?.type).toBe('finish');

  const page = await expectContract(
    await app.api(`/api/conversations/${cid}?limit=1`, { cookie }),
    ConversationPage,
  );
  expect(page.messages.map((m) => m.text)).toEqual(['Due north.']);
  expect(page.before).not.toBeNull();
  const older = await expectContract(
    await app.api(`/api/conversations/${cid}/messages?before=${page.before}`, { cookie }),
    MessagePage,
  );
  expect(older.messages.map((m) => m.text)).toEqual(['Which way?']);
  await expectContract(
    await app.api(`/api/conversations/${cid}`, { cookie, method: 'PATCH', body: { title: 'Bearings' } }),
    ConversationResponse,
  );
  const list = await expectContract(
    await app.api('/api/conversations', { cookie }),
    ConversationListResponse,
  );
  expect(list.conversations.find((c) => c.id === cid)).toMatchObject({
    title: 'Bearings',
    publication: null,
  });
  await expectContract(await app.api('/api/usage?by=npc&days=30', { cookie }), UsageResponse);

  // What NPCs may use: Skills, Memory, MCP Servers, and an NPC's grants.
  const skill = await expectContract(
    await app.api('/api/skills', {
      cookie,
      body: { name: 'tides', description: 'Tide tables.', instructions: 'Read the table.' },
    }),
    SkillResponse,
    201,
  );
  await expectContract(await app.api('/api/skills', { cookie }), SkillListResponse);
  const memory = await expectContract(
    await app.api('/api/memories', { cookie, body: { text: 'The boat is blue.' } }),
    MemoryResponse,
    201,
  );
  expect(memory.memory.createdAt).toBeInstanceOf(Date);
  await expectContract(
    await app.api(`/api/memories/${memory.memory.id}`, { cookie, method: 'PATCH', body: { text: 'Green.' } }),
    MemoryResponse,
  );
  await expectContract(await app.api('/api/memories', { cookie }), MemoryListResponse);
  const server = await expectContract(
    await app.api('/api/mcp-servers', {
      cookie,
      body: { name: 'maps', url: 'http://127.0.0.1:9/mcp', headers: { authorization: 'Bearer SECRET' } },
    }),
    McpServerResponse,
    201,
  );
  expect(server.server.headerNames).toEqual(['authorization']);
  const servers = await expectContract(await app.api('/api/mcp-servers', { cookie }), McpServerListResponse);
  expect(JSON.stringify(servers)).not.toContain('SECRET');
  await expectContract(
    await app.api(`/api/npcs/${id}`, {
      cookie,
      method: 'PATCH',
      body: { grants: [{ kind: 'memory' }, { kind: 'skill', skillId: skill.skill.id }] },
    }),
    NpcResponse,
  );
  const grants = await expectContract(await app.api(`/api/npcs/${id}/grants`, { cookie }), GrantListResponse);
  expect(grants.grants.map((g) => g.kind).sort()).toEqual(['memory', 'skill']);
});

it('publishing, replies and the reader answer by the contract too', async () => {
  const { npc } = (await (await app.api('/api/npcs', { cookie, body: { name: 'Tern' } })).json()) as {
    npc: { id: string };
  };
  const { conversation } = (await (
    await app.api('/api/conversations', { cookie, body: { npcIds: [npc.id] } })
  ).json()) as { conversation: { id: string } };
  app.fake.enqueue(textScript('Low tide at noon.'));
  const turn = await app.api(`/api/conversations/${conversation.id}/messages`, {
    cookie,
    body: { text: 'When?' },
  });
  const frames = await collectFrames(turn);
  const reply = frames.find((f) => f.type === 'start')?.messageId;

  const stopped = await expectContract(
    await app.api(`/api/conversations/${conversation.id}/messages/${reply}/stop`, { cookie, method: 'POST' }),
    StopResponse,
  );
  expect(stopped.status).toBe('complete');
  const publication = await expectContract(
    await app.api(`/api/conversations/${conversation.id}/publication`, { cookie }),
    PublicationResponse,
  );
  expect(publication).toEqual({ publication: null, draft: null });
  await expectContract(await app.api('/xrpc/click.aligned.chat.listSessions?limit=5'), ListSessionsResponse);
});

it('keeps what is internal on the server: no owner id on an NPC, no rolling summary on a Conversation', async () => {
  const npc = (await (await app.api('/api/npcs', { cookie, body: { name: 'Moss' } })).json()) as {
    npc: Record<string, unknown>;
  };
  expect(npc.npc).not.toHaveProperty('playerId');
  const created = (await (
    await app.api('/api/conversations', { cookie, body: { npcIds: [npc.npc.id] } })
  ).json()) as { conversation: Record<string, unknown> };
  expect(created.conversation).not.toHaveProperty('summary');
  expect(created.conversation).not.toHaveProperty('summaryThrough');
});

// A Player's conversations are theirs alone: no browser disk cache (a shared computer) or proxy keeps them.
// (With only an ETag, Chromium also held each repeated GET of a URL until the one before it finished.)
it('marks every answer of the app’s API as not to be stored', async () => {
  for (const path of ['/api/me', '/api/npcs', '/api/conversations', '/api/usage?by=npc&days=30']) {
    const res = await app.api(path, { cookie });
    expect(res.headers.get('cache-control'), path).toBe('no-store');
  }
  const refused = await app.api('/api/conversations');
  expect(refused.status).toBe(401);
  expect(refused.headers.get('cache-control')).toBe('no-store');
});
