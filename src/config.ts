import os from 'node:os';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { type ProviderConfig, parseSecretsKey } from './village/index.ts';

export type { ProviderConfig, ProviderKind } from './village/index.ts';

/** One OpenAI-compatible endpoint (Ollama, LM Studio, vLLM, OpenRouter, …), named by the instance. */
const CompatibleProvider = z.object({
  id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'a provider id is lowercase letters, digits and dashes'),
  baseURL: z.url(),
  apiKey: z.string().optional(),
  /**
   * The tag an R1-style model wraps its chain of thought in, inside the content (Ollama, vLLM without a
   * reasoning parser, LM Studio, Groq's `reasoning_format=raw`): split out as reasoning. Default `think`.
   */
  reasoningTag: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_.-]{0,39}$/, 'a reasoning tag is a tag name such as "think"')
    .optional(),
});

const commaList = z
  .string()
  .optional()
  .transform((s) =>
    (s ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );

/** An address range as CIDR (`10.0.0.0/8`, `fd00::/8`); a bare address is that one address. Normalised. */
function cidr(value: string): string | undefined {
  try {
    if (ipaddr.isValid(value) && !value.includes('/')) {
      const ip = ipaddr.process(value);
      return `${ip.toString()}/${ip.kind() === 'ipv4' ? 32 : 128}`;
    }
    const [ip, bits] = ipaddr.parseCIDR(value);
    return `${ip.toString()}/${bits}`;
  } catch {
    return undefined;
  }
}

const Env = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().optional(),
  /**
   * Connections this process sends its queries over (ADR 0074): unset, twice its cores (at least 4). Beyond that,
   * queries are pipelined onto the open ones, which on a few cores is faster than waking more backends.
   */
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(500).optional(),
  DATA_DIR: z.string().default('./data'),
  ADMIN_DIDS: commaList,
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_BASE_URL: z.url().optional(),
  ANTHROPIC_API_KEY: z.string().optional(),
  ANTHROPIC_BASE_URL: z.url().optional(),
  GOOGLE_GENERATIVE_AI_API_KEY: z.string().optional(),
  GOOGLE_BASE_URL: z.url().optional(),
  /**
   * Encrypts the Provider keys an admin adds in the app (AES-256-GCM): 32 bytes as 64 hex digits or base64
   * (`openssl rand -hex 32`). Unset in offline mode: made once into DATA_DIR/secrets.key.
   */
  SECRETS_KEY: z.string().optional(),
  /** After a Conversation's first exchange, its Model summarises a short title (charged to the Player). */
  SUMMARISED_TITLES: z.enum(['true', 'false']).default('true'),
  /** JSON array of {id, baseURL, apiKey?}. */
  COMPATIBLE_PROVIDERS: z.string().optional(),
  /** Seeds the Village default Provider and Model when none is stored yet. */
  DEFAULT_PROVIDER: z.string().optional(),
  DEFAULT_MODEL: z.string().optional(),
  /** The public https URL of this instance: makes the OAuth client a confidential one (private_key_jwt). */
  PUBLIC_URL: z.url().optional(),
  /** JSON array of private ES256 JWKs for the confidential client (`npm run oauth-keys` makes them). */
  OAUTH_PRIVATE_KEYS: z.string().optional(),
  /** "local" starts a PLC and PDS in-process (offline mode); "public" uses the network. */
  ATPROTO_NETWORK: z.enum(['local', 'public']).optional(),
  HANDLE_RESOLVER_URL: z.url().default('https://bsky.social'),
  PLC_URL: z.url().default('https://plc.directory'),
  LOCALNET_PDS_PORT: z.coerce.number().int().min(0).max(65535).default(2583),
  LOCALNET_PLC_PORT: z.coerce.number().int().min(0).max(65535).default(2582),
  DEMO_ACCOUNTS: commaList,
  /** The relay (wss://…) whose event stream the AppView indexes; offline mode follows the local PDS. */
  INDEXER_RELAY_URL: z
    .string()
    .regex(/^wss?:\/\//, 'a ws:// or wss:// URL')
    .optional(),
  /**
   * A Jetstream instance's subscribe endpoint (wss://…/subscribe) to index from instead of a relay: it filters
   * to our collections on its side (ADR 0039). Set at most one of this and INDEXER_RELAY_URL.
   */
  INDEXER_JETSTREAM_URL: z
    .string()
    .regex(/^wss?:\/\//, 'a ws:// or wss:// URL')
    .optional(),
  /**
   * The labelers whose labels this instance honours (com.atproto.label.subscribeLabels), comma-separated: a DID
   * (its service from its DID document) or `did|https://service` (ADR 0060).
   */
  LABELERS: commaList.pipe(
    z.array(
      z
        .string()
        .regex(
          /^did:[a-z]+:[a-zA-Z0-9._:%-]{1,2000}(\|(https?|wss?):\/\/\S+)?$/,
          'a labeler is a DID, or did|https://its-service',
        )
        .transform((v) => {
          const [did, url] = v.split('|') as [string, string | undefined];
          return url ? { did, url } : { did };
        }),
    ),
  ),
  /** Turns on the AI SDK's OpenTelemetry spans on every Provider call (an OTel SDK must be registered to export). */
  OTEL_TELEMETRY: z.enum(['true', 'false']).default('false'),
  /** Limits on every tool call: time, and the size of what it returns to the model. */
  TOOL_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  TOOL_MAX_OUTPUT_BYTES: z.coerce.number().int().min(256).default(65_536),
  /** How long a ref's current state and a mention's handle, looked up for a reader, are reused (ms). */
  LOOKUP_CACHE_MS: z.coerce.number().int().min(0).default(10_000),
  /** Requests a minute one client address may make to the public reading routes (XRPC, reader, thread pages). */
  PUBLIC_REQUESTS_PER_MINUTE: z.coerce.number().int().min(1).default(300),
  /**
   * The reverse proxies whose X-Forwarded-For is believed (CIDRs, comma-separated). None by default: the socket's
   * address is the client's, whatever headers it sends.
   */
  TRUSTED_PROXIES: commaList.pipe(
    z.array(
      z
        .string()
        .refine((v) => cidr(v) !== undefined, {
          error: (i) => `"${String(i.input)}" is not an address or CIDR range (e.g. 172.28.0.10/32)`,
        })
        .transform((v) => cidr(v)!),
    ),
  ),
  /** Lets MCP Server URLs reach loopback and private addresses (off: SSRF guard). */
  ALLOW_PRIVATE_TOOL_URLS: z.enum(['true', 'false']).default('false'),
  /**
   * Lets pages attached by URL come from loopback and private addresses. Separate from the tool setting: a page's
   * text goes back to the Player who asked for it, so this opens internal services to every signed-in Player.
   */
  ALLOW_PRIVATE_PAGE_URLS: z.enum(['true', 'false']).default('false'),
  /** How often a streaming reply is written to its row, in ms (issue 2: about 250 ms). */
  CHECKPOINT_MS: z.coerce.number().int().min(10).max(10_000).default(250),
  /** Upper bound for one Provider call without any output, so a silent Provider cannot hold a turn forever. */
  PROVIDER_CHUNK_TIMEOUT_MS: z.coerce.number().int().min(100).default(120_000),
  /** Most characters of Parts one reply may hold, and the longest it may run: a Model looping, or a Provider
   * trickling a token a minute, ends there instead of growing a row and holding a stream for ever. */
  REPLY_MAX_CHARS: z.coerce.number().int().min(1000).max(100_000_000).default(1_000_000),
  REPLY_MAX_MS: z.coerce.number().int().min(1000).max(86_400_000).default(900_000),
  REPLY_MAX_PARTS: z.coerce.number().int().min(100).max(1_000_000).default(5000),
  /**
   * Longest one attachment upload may take, first byte to last (a stalled client is cut off). Under the hour after
   * which a staging blob counts as a crashed upload's leftover.
   */
  UPLOAD_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_000_000).default(300_000),
  /**
   * How long a live append that failed waits before it is tried again, in seconds; the wait doubles with each
   * failure in a row, up to an hour (ADR 0077).
   */
  LIVE_RETRY_SECONDS: z.coerce.number().int().min(1).max(3600).default(15),
  /** The least severe log lines written. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** JSON lines, or pino-pretty's; by default JSON when NODE_ENV=production, pretty otherwise. */
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  NODE_ENV: z.string().optional(),
  /** The bearer token /metrics asks for; unset, /metrics is not served (404). */
  METRICS_TOKEN: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.string().min(16, 'METRICS_TOKEN is at least 16 characters').optional(),
  ),
});

export interface Config {
  port: number;
  host: string;
  databaseUrl?: string;
  /** Connections for queries (the few held for the life of the process come on top: db/client.ts). */
  databasePoolSize: number;
  dataDir: string;
  adminDids: string[];
  providers: ProviderConfig[];
  checkpointMs: number;
  providerChunkTimeoutMs: number;
  replyLimits: { maxChars: number; maxMs: number; maxParts: number };
  uploadTimeoutMs: number;
  /** The first wait before a failed live append is tried again (ms). */
  liveRetryMs: number;
  /**
   * Longest a turn waits for its claim's COMMIT to be answered before it looks the claim up (a database that
   * hangs: a synchronous standby gone, a stalled disk), in ms.
   */
  commitWaitMs: number;
  defaultProvider?: string;
  defaultModel?: string;
  /** Where openai/anthropic/google are reached when their key is added in the app (their *_BASE_URL). */
  providerBaseUrls: Partial<Record<'openai' | 'anthropic' | 'google', string>>;
  summariseTitles: boolean;
  /** SECRETS_KEY's 32 bytes, when set. */
  secretsKey?: Buffer;
  allowPrivateToolUrls: boolean;
  allowPrivatePageUrls: boolean;
  publicRequestsPerMinute: number;
  /** CIDRs of the reverse proxies whose X-Forwarded-For names the client (empty: none is believed). */
  trustedProxies: string[];
  lookupCacheMs: number;
  toolLimits: { timeoutMs: number; maxOutputBytes: number };
  indexerRelayUrl?: string;
  indexerJetstreamUrl?: string;
  /** The labelers followed (ADR 0060): a DID, and its service when not read from its DID document. */
  labelers: { did: string; url?: string }[];
  /** experimental_telemetry on the AI SDK calls. */
  telemetry: boolean;
  atproto: AtprotoConfig;
  log: {
    level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
    format: 'json' | 'pretty';
  };
  /** Bearer token for /metrics (undefined: not served). */
  metricsToken?: string;
}

export interface AtprotoConfig {
  network: 'local' | 'public';
  publicUrl?: string;
  /** Private JWKs (JSON objects) for the confidential client. */
  privateKeys: Record<string, unknown>[];
  handleResolverUrl: string;
  plcUrl: string;
  localnet: { pdsPort: number; plcPort: number; demoAccounts: string[] };
}

export class ConfigError extends Error {}

/** PostgreSQL's own rule of thumb for a pool is twice the database's cores; ours stand in for them (ADR 0074). */
export const defaultPoolSize = () => Math.max(4, 2 * os.availableParallelism());

/** Reads the environment once, through zod, into the typed config everything else is built from. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const e = parseEnv(env);
  const providers = envProviders(e);
  const secretsKey = envSecretsKey(e);
  const privateKeys = e.OAUTH_PRIVATE_KEYS ? parseKeys(e.OAUTH_PRIVATE_KEYS) : [];
  checkCombinations(e, privateKeys);
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE ?? defaultPoolSize(),
    dataDir: e.DATA_DIR,
    adminDids: e.ADMIN_DIDS,
    providers,
    checkpointMs: e.CHECKPOINT_MS,
    providerChunkTimeoutMs: e.PROVIDER_CHUNK_TIMEOUT_MS,
    replyLimits: { maxChars: e.REPLY_MAX_CHARS, maxMs: e.REPLY_MAX_MS, maxParts: e.REPLY_MAX_PARTS },
    uploadTimeoutMs: e.UPLOAD_TIMEOUT_MS,
    liveRetryMs: e.LIVE_RETRY_SECONDS * 1000,
    commitWaitMs: 15_000,
    defaultProvider: e.DEFAULT_PROVIDER,
    defaultModel: e.DEFAULT_MODEL,
    providerBaseUrls: {
      openai: e.OPENAI_BASE_URL,
      anthropic: e.ANTHROPIC_BASE_URL,
      google: e.GOOGLE_BASE_URL,
    },
    secretsKey,
    summariseTitles: e.SUMMARISED_TITLES === 'true',
    allowPrivateToolUrls: e.ALLOW_PRIVATE_TOOL_URLS === 'true',
    allowPrivatePageUrls: e.ALLOW_PRIVATE_PAGE_URLS === 'true',
    publicRequestsPerMinute: e.PUBLIC_REQUESTS_PER_MINUTE,
    trustedProxies: e.TRUSTED_PROXIES,
    lookupCacheMs: e.LOOKUP_CACHE_MS,
    toolLimits: { timeoutMs: e.TOOL_TIMEOUT_MS, maxOutputBytes: e.TOOL_MAX_OUTPUT_BYTES },
    indexerRelayUrl: e.INDEXER_RELAY_URL,
    indexerJetstreamUrl: e.INDEXER_JETSTREAM_URL,
    labelers: e.LABELERS,
    telemetry: e.OTEL_TELEMETRY === 'true',
    log: { level: e.LOG_LEVEL, format: e.LOG_FORMAT ?? (e.NODE_ENV === 'production' ? 'json' : 'pretty') },
    metricsToken: e.METRICS_TOKEN,
    atproto: envAtproto(e, privateKeys),
  };
}

type EnvValues = z.infer<typeof Env>;

/** The environment through the schema; every field's complaint in one error. */
function parseEnv(env: NodeJS.ProcessEnv): EnvValues {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

/** The Providers whose keys the environment holds, or the demo Model when it holds none. */
function envProviders(e: EnvValues): ProviderConfig[] {
  const providers: ProviderConfig[] = [];
  if (e.OPENAI_API_KEY)
    providers.push({ id: 'openai', kind: 'openai', apiKey: e.OPENAI_API_KEY, baseURL: e.OPENAI_BASE_URL });
  if (e.ANTHROPIC_API_KEY)
    providers.push({
      id: 'anthropic',
      kind: 'anthropic',
      apiKey: e.ANTHROPIC_API_KEY,
      baseURL: e.ANTHROPIC_BASE_URL,
    });
  if (e.GOOGLE_GENERATIVE_AI_API_KEY)
    providers.push({
      id: 'google',
      kind: 'google',
      apiKey: e.GOOGLE_GENERATIVE_AI_API_KEY,
      baseURL: e.GOOGLE_BASE_URL,
    });
  if (e.COMPATIBLE_PROVIDERS) providers.push(...parseCompatible(e.COMPATIBLE_PROVIDERS));
  // With no key at all, the Village offers the scripted demo Model so the product works offline.
  if (providers.length === 0) providers.push({ id: 'demo', kind: 'demo' });
  return providers;
}

/** SECRETS_KEY's 32 bytes, when set; a value that is set but not 32 bytes stops the start. */
function envSecretsKey(e: EnvValues): Buffer | undefined {
  const secretsKey = e.SECRETS_KEY === undefined ? undefined : parseSecretsKey(e.SECRETS_KEY);
  if (e.SECRETS_KEY !== undefined && !secretsKey)
    throw new ConfigError(
      'SECRETS_KEY must be 32 bytes as 64 hex digits or base64 (run `openssl rand -hex 32`).',
    );
  return secretsKey;
}

/** Settings valid alone but not together. */
function checkCombinations(e: EnvValues, privateKeys: Record<string, unknown>[]): void {
  if (e.PUBLIC_URL && !e.PUBLIC_URL.startsWith('https://'))
    throw new ConfigError('PUBLIC_URL must be an https URL.');
  if (e.INDEXER_RELAY_URL && e.INDEXER_JETSTREAM_URL)
    throw new ConfigError(
      'Set INDEXER_RELAY_URL or INDEXER_JETSTREAM_URL, not both: the index follows one source.',
    );
  if (e.PUBLIC_URL && privateKeys.length === 0) {
    throw new ConfigError('PUBLIC_URL needs OAUTH_PRIVATE_KEYS (run `npm run oauth-keys` to make them).');
  }
}

/** The ATProto network's settings: public once a PUBLIC_URL is set, unless ATPROTO_NETWORK says otherwise. */
function envAtproto(e: EnvValues, privateKeys: Record<string, unknown>[]): AtprotoConfig {
  return {
    network: e.ATPROTO_NETWORK ?? (e.PUBLIC_URL ? 'public' : 'local'),
    publicUrl: e.PUBLIC_URL?.replace(/\/$/, ''),
    privateKeys,
    handleResolverUrl: e.HANDLE_RESOLVER_URL,
    plcUrl: e.PLC_URL,
    localnet: {
      pdsPort: e.LOCALNET_PDS_PORT,
      plcPort: e.LOCALNET_PLC_PORT,
      demoAccounts: e.DEMO_ACCOUNTS.length ? e.DEMO_ACCOUNTS : ['alice', 'bob'],
    },
  };
}

function parseKeys(raw: string): Record<string, unknown>[] {
  try {
    const keys = JSON.parse(raw) as unknown;
    if (Array.isArray(keys) && keys.every((k) => k && typeof k === 'object' && 'd' in k)) {
      return keys as Record<string, unknown>[];
    }
  } catch {}
  throw new ConfigError(
    'OAUTH_PRIVATE_KEYS must be a JSON array of private JWKs (run `npm run oauth-keys`).',
  );
}

function parseCompatible(raw: string): ProviderConfig[] {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new ConfigError('COMPATIBLE_PROVIDERS must be a JSON array of {"id","baseURL","apiKey"?}');
  }
  const list = z.array(CompatibleProvider).safeParse(json);
  if (!list.success)
    throw new ConfigError(`COMPATIBLE_PROVIDERS: ${list.error.issues[0]?.message ?? 'invalid'}`);
  return list.data.map((p) => ({
    id: p.id,
    kind: 'compatible',
    baseURL: p.baseURL,
    apiKey: p.apiKey,
    reasoningTag: p.reasoningTag,
  }));
}
