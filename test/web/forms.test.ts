import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import type { TestApp } from '../support/app.ts';
import { shoot } from '../support/browser.ts';
import { type SignedIn, useSignedInApp } from '../support/webapp.ts';

let app: TestApp;
let browser: SignedIn;
useSignedInApp((a, b) => {
  app = a;
  browser = b;
});

/** Whether the element's box lies inside the window (what the Player can see without scrolling). */
async function inView(page: Page, selector: string): Promise<boolean> {
  return page.locator(selector).evaluate((e) => {
    const r = e.getBoundingClientRect();
    return r.top >= 0 && r.top < e.ownerDocument.documentElement.clientHeight && r.height > 0;
  });
}
const focused = (page: Page, selector: string) =>
  page
    .locator(selector)
    .evaluate((e) => e === e.ownerDocument.activeElement || e.contains(e.ownerDocument.activeElement));

for (const width of [1280, 390]) {
  it(`NPC page at ${width} px: the list comes first, Edit brings the form, Save and Create say so and show the NPC`, async () => {
    const { page, cookie } = browser;
    const names = [`Ada ${width}`, `Bo ${width}`, `Cy ${width}`, `Di ${width}`, `Ed ${width}`];
    const ids: string[] = [];
    for (const name of names) {
      const res = await app.api('/api/npcs', {
        cookie,
        body: { name, jobTitle: 'Keeper', prompt: 'x'.repeat(50) },
      });
      ids.push(((await res.json()) as { npc: { id: string } }).npc.id);
    }
    await page.setViewportSize({ width, height: 844 });
    await page.goto(`${app.url}/npcs`);
    await page.locator(`#npc-${ids[2]}`).waitFor();
    // The list is not hidden below the form: on a phone it comes first.
    const listTop = (await page.locator('.npc-list').boundingBox())!.y;
    const form = page.locator('form.npc-form');
    const formBox = (await form.boundingBox())!;
    if (width === 390) expect(listTop).toBeLessThan(formBox.y);
    else expect(listTop).toBeLessThan(formBox.y + formBox.height);

    // Edit on the third NPC: its form comes into view with the name focused.
    await page.getByRole('button', { name: `Edit ${names[2]}` }).click();
    const edit = page.getByRole('form', { name: 'Edit NPC' });
    await expect.poll(() => edit.getByLabel('Name').inputValue()).toBe(names[2]);
    await expect.poll(() => inView(page, 'form.npc-form h2')).toBe(true);
    expect(await focused(page, 'form.npc-form input[required]')).toBe(true);
    await edit.getByLabel('Job Title').fill('Cartographer');
    await edit.getByRole('button', { name: 'Save' }).click();

    // Saved: said in a status line on screen, the NPC in view and focused, the form back to New.
    const status = page.getByRole('status').filter({ hasText: `Saved ${names[2]}.` });
    await status.waitFor();
    expect(await status.isVisible()).toBe(true);
    await expect.poll(() => focused(page, `#npc-${ids[2]}`)).toBe(true);
    expect(await inView(page, `#npc-${ids[2]}`)).toBe(true);
    expect(await page.locator(`#npc-${ids[2]}`).textContent()).toContain('Cartographer');
    await page.getByRole('form', { name: 'New NPC' }).waitFor();
    await shoot(page, `npcs-saved-from-${width}`);

    // Created: the same, for the new NPC.
    await page.setViewportSize({ width, height: 844 });
    const create = page.getByRole('form', { name: 'New NPC' });
    await create.getByLabel('Name').fill(`Fay ${width}`);
    await create.getByRole('button', { name: 'Create NPC' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Created Fay ${width}.` })
      .waitFor();
    const fay = page.locator('.npc-list li', { hasText: `Fay ${width}` });
    await expect.poll(() => fay.evaluate((e) => e === e.ownerDocument.activeElement)).toBe(true);
    expect(await create.getByLabel('Name').inputValue()).toBe('');

    // Delete asks in the page's own dialog: Cancel keeps the NPC, Delete removes it and says so.
    await fay.getByRole('button', { name: 'Delete' }).click();
    const ask = page.getByRole('dialog', { name: `Delete Fay ${width}?` });
    await ask.waitFor();
    expect(
      await ask.getByRole('button', { name: 'Cancel' }).evaluate((e) => e === e.ownerDocument.activeElement),
    ).toBe(true);
    await shoot(page, `npcs-delete-dialog-from-${width}`);
    await ask.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => ask.count()).toBe(0);
    expect(await fay.count()).toBe(1);
    // Focus is back on the button that opened the dialog.
    expect(
      await fay.getByRole('button', { name: 'Delete' }).evaluate((e) => e === e.ownerDocument.activeElement),
    ).toBe(true);
    await fay.getByRole('button', { name: 'Delete' }).click();
    await ask.getByRole('button', { name: 'Delete' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Deleted Fay ${width}.` })
      .waitFor();
    await expect.poll(() => fay.count()).toBe(0);
    for (const id of ids) await app.api(`/api/npcs/${id}`, { cookie, method: 'DELETE' });
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 60_000);
}
