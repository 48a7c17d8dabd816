/**
 * Runs `hold`, whose body waits where it is until `release`: a lock, lease or transaction held open on purpose, so a
 * test can make something else meet it. Resolves once the body is reached; `release` lets it finish and waits for it.
 */
export async function holdOpen(hold: (body: () => Promise<void>) => Promise<unknown>) {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let reached!: () => void;
  const isReached = new Promise<void>((r) => {
    reached = r;
  });
  const holding = hold(async () => {
    reached();
    await released;
  });
  await Promise.race([isReached, holding]);
  return {
    async release() {
      release();
      await holding;
    },
  };
}
