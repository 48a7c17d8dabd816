import { z } from 'zod';

/**
 * The Provider keys as a Village admin sees them: where each comes from, and at most its last four characters.
 * The key itself never leaves the server.
 */
export const ProviderKeysView = z.object({
  /** False when the instance has no SECRETS_KEY to encrypt keys with (production without it). */
  canStore: z.boolean(),
  keys: z.array(
    z.object({
      provider: z.enum(['openai', 'anthropic', 'google']),
      /** `app`: added on this page (it wins over the environment's); `environment`: from its variable. */
      source: z.enum(['app', 'environment']).nullable(),
      ending: z.string().max(4).nullable(),
      /** A stored key that does not open with this instance's SECRETS_KEY (the key was changed). */
      unreadable: z.boolean(),
    }),
  ),
});
export type ProviderKeysView = z.output<typeof ProviderKeysView>;
