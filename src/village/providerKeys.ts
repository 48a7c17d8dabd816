import { z } from 'zod';
import type { Sql } from '../db/index.ts';
import type { ProviderKeysView } from '../wire/index.ts';
import type { ProviderRegistry } from './providers.ts';
import type { SecretBox } from './secrets.ts';

/** The Providers whose key an admin can add in the app (each has a default endpoint; the env may move it). */
export const STORABLE = ['openai', 'anthropic', 'google'] as const;
export type StorableProvider = (typeof STORABLE)[number];
export const StorableProvider = z.enum(STORABLE);

/** A pasted key: printable, no spaces, of a plausible length. Trimmed (a copy often brings a newline). */
export const ProviderKeyBody = z
  .object({
    apiKey: z
      .string()
      .trim()
      .min(8, 'that is too short to be an API key')
      .max(500, 'that is too long to be an API key')
      .regex(/^[\x21-\x7e]+$/, 'an API key has no spaces or line breaks'),
  })
  .strict();

interface Row {
  providerId: StorableProvider;
  iv: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
  ending: string;
}

const rows = (sql: Sql) =>
  sql<Row[]>`select provider_id as "providerId", iv, ciphertext, tag, ending from provider_keys`;

export async function storeProviderKey(
  sql: Sql,
  box: SecretBox,
  provider: StorableProvider,
  apiKey: string,
  by: string,
): Promise<void> {
  const sealed = box.seal(provider, apiKey);
  await sql`insert into provider_keys (provider_id, iv, ciphertext, tag, ending, updated_by)
    values (${provider}, ${sealed.iv}, ${sealed.ciphertext}, ${sealed.tag}, ${apiKey.slice(-4)}, ${by})
    on conflict (provider_id) do update set iv = excluded.iv, ciphertext = excluded.ciphertext, tag = excluded.tag,
      ending = excluded.ending, updated_by = excluded.updated_by, updated_at = now()`;
}

export async function deleteProviderKey(sql: Sql, provider: StorableProvider): Promise<void> {
  await sql`delete from provider_keys where provider_id = ${provider}`;
}

/**
 * Reads the stored keys, opens them and hands them to the registry, which uses them from the next turn on: no
 * restart. Called at start, after every change here, and every 30 s (another instance's change). Without a
 * SecretBox nothing stored can be opened, and the environment's keys are all there is.
 */
export async function refreshProviderKeys(sql: Sql, box: SecretBox | undefined, registry: ProviderRegistry) {
  const opened: { id: StorableProvider; apiKey: string }[] = [];
  for (const row of box ? await rows(sql) : []) {
    const apiKey = box!.open(row.providerId, row);
    if (apiKey) opened.push({ id: row.providerId, apiKey });
  }
  registry.useStoredKeys(opened);
}

/** What the admin page shows: per Provider, where its key comes from and its last four characters. */
export async function providerKeysView(
  sql: Sql,
  box: SecretBox | undefined,
  registry: ProviderRegistry,
): Promise<ProviderKeysView> {
  const stored = new Map((await rows(sql)).map((r) => [r.providerId, r]));
  return {
    canStore: Boolean(box),
    keys: STORABLE.map((provider) => {
      const row = stored.get(provider);
      const unreadable = Boolean(row) && (!box || box.open(provider, row!) === undefined);
      if (row && !unreadable) return { provider, source: 'app', ending: row.ending, unreadable };
      const env = registry.environmentKey(provider);
      return {
        provider,
        source: env ? 'environment' : null,
        ending: env ? env.slice(-4) : null,
        unreadable,
      };
    }),
  };
}
