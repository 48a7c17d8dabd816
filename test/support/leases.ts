import type { Leases } from '../../src/db/index.ts';
import { PUBLICATION_LEASE, publicationLease } from '../../src/publish/index.ts';
import { holdOpen } from './hold.ts';

/**
 * Holds a Conversation's publication lease through `leases`, as another change to it would (the app's own
 * leases: in line with its requests, first come first served; a Leases of its own: as another instance), until
 * `release`.
 */
export function holdPublication(leases: Leases, conversationId: string) {
  return holdOpen((body) => leases.hold(publicationLease(conversationId), PUBLICATION_LEASE, body));
}
