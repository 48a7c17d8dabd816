import type { Leases } from '../../src/db/index.ts';
import { PUBLICATION_LEASE, publicationLease } from '../../src/publish/index.ts';

/**
 * Holds a Conversation's publication lease through `leases`, as another change to it would (the app's own
 * leases: in line with its requests, first come first served; a Leases of its own: as another instance), until
 * `release`.
 */
export async function holdPublication(leases: Leases, conversationId: string) {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let held!: () => void;
  const isHeld = new Promise<void>((r) => {
    held = r;
  });
  const holding = leases.hold(publicationLease(conversationId), PUBLICATION_LEASE, async () => {
    held();
    await released;
  });
  await isHeld;
  return {
    async release() {
      release();
      await holding;
    },
  };
}
