import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

let app: TestApp;
let dir: string;
beforeAll(async () => {
  // The fault: the data folder is a file, so a sandbox (granted below) cannot be made.
  dir = await mkdtemp(path.join(os.tmpdir(), 'av-setup-'));
  const notAFolder = path.join(dir, 'data');
  await writeFile(notAFolder, 'not a folder');
  app = await startTestApp({}, { DATA_DIR: notAFolder });
}, 60_000);
afterAll(async () => {
  await app?.close();
  await rm(dir, { recursive: true, force: true });
});

it('a reply that fails before the Provider is called says so as ours (INTERNAL), not as the Provider’s', async () => {
  const { cookie } = await app.signIn();
  const { conversationId, npcIds } = await setupConversation(app, cookie);
  await app.api(`/api/npcs/${npcIds[0]}/grants`, {
    method: 'PUT',
    cookie,
    body: { grants: [{ kind: 'sandbox' }] },
  });
  const before = app.fake.requests.length;
  const frames = await collectFrames(
    await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Hello' } }),
  );
  expect(frames.find((f) => f.type === 'error')).toMatchObject({ code: 'INTERNAL' });
  expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'failed' });
  // The fault fired where intended: the Provider was never asked.
  expect(app.fake.requests.length).toBe(before);
});
