/**
 * Polls `check` every 200 ms until it gives a value, which it returns; throws naming `what` after `ms`, with
 * what `explain` says of the state then (so a failure in CI says why, not only that).
 */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  ms = 20_000,
  explain?: () => Promise<string>,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) {
      const state = explain ? await explain().catch((e: unknown) => `(could not say: ${String(e)})`) : '';
      throw new Error(`timed out waiting for ${what}${state ? `: ${state}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
