/** Polls `check` every 200 ms until it gives a value, which it returns; throws naming `what` after `ms`. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  ms = 20_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
