import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Npc } from '../../client/src/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { openSignedIn } from '../support/webapp.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
}, 60_000);
afterAll(() => app?.close());

it('a Player creates an NPC, then edits every field of it from the page, and the edit is saved', async () => {
  const browser = await openSignedIn(app);
  try {
    const { page } = browser;
    await page.goto(`${app.url}/npcs`);
    const form = page.getByRole('form', { name: 'New NPC' });
    await form.getByLabel('Name').fill('Ada');
    await form.getByLabel('Job Title').fill('Librarian');
    await form.getByRole('button', { name: /Create|Save/ }).click();
    await page.getByRole('button', { name: 'Edit' }).first().click();
    const edit = page.getByRole('form', { name: 'Edit NPC' });
    await edit.getByLabel('Name').fill('Ada Lovelace');
    await edit.getByLabel('Job Title').fill('Analyst');
    await edit.getByLabel('Description').fill('Writes the first programs.');
    await edit.getByLabel('Prompt').fill('Be precise.');
    await edit.getByLabel('Model').fill('fake-model');
    await edit.getByLabel('Thinking (show reasoning)').check();
    // The editor says when it cannot tell whether the Model thinks (an endpoint the registry does not list).
    await edit
      .getByRole('note')
      .filter({ hasText: 'Whether fake-model can think is not known here' })
      .waitFor();
    const saved = page.waitForResponse(
      (r) => r.url().includes('/api/npcs/') && r.request().method() === 'PATCH',
    );
    await edit.getByRole('button', { name: /Save/ }).click();
    expect((await saved).status()).toBe(200);
    const { npcs } = (await (await app.api('/api/npcs', { cookie: browser.cookie })).json()) as {
      npcs: Npc[];
    };
    expect(npcs).toHaveLength(1);
    expect(npcs[0]).toMatchObject({
      name: 'Ada Lovelace',
      jobTitle: 'Analyst',
      description: 'Writes the first programs.',
      prompt: 'Be precise.',
      model: 'fake-model',
      thinking: true,
    });
  } finally {
    await browser.close();
  }
}, 60_000);
