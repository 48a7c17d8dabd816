/** The one place the browser talks JSON to the server. Errors carry the server's code and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** What the server attached (e.g. PUBLISH_PROBLEMS' list of problems). */
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export async function api<T>(
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<T> {
  const res = await fetch(path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    // The server refuses a change that carries neither JSON nor this header (see http/security.ts).
    headers: init.body === undefined ? { 'x-agentsville': '1' } : { 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: init.signal,
  });
  if (res.status === 204) return undefined as T;
  const body = (await res.json().catch(() => null)) as {
    error?: { code: string; message: string; details?: unknown };
  } | null;
  if (!res.ok) {
    throw new ApiError(
      res.status,
      body?.error?.code ?? 'HTTP_ERROR',
      body?.error?.message ?? `The server answered ${res.status}.`,
      body?.error?.details,
    );
  }
  return body as T;
}

export interface Me {
  did: string;
  handle: string | null;
}
export interface Npc {
  id: string;
  name: string;
  jobTitle: string;
  description: string;
  prompt: string;
  provider: string | null;
  model: string | null;
  thinking: boolean;
}
export interface Conversation {
  id: string;
  title: string | null;
  updatedAt: string;
  createdAt: string;
  npcIds?: string[];
  /** The publication's state when it has one (listed Conversations only). */
  publication?: 'publishing' | 'published' | 'unpublishing' | 'failed' | null;
}
export interface Usage {
  inputTokens: number | null;
  outputTokens: number | null;
  reasoningTokens: number | null;
  cachedInputTokens: number | null;
}
export interface Message {
  id: string;
  seq: string;
  role: 'player' | 'npc';
  npcId: string | null;
  npcName: string | null;
  parts: unknown[];
  text: string;
  status: 'streaming' | 'complete' | 'stopped' | 'failed' | 'interrupted';
  error: string | null;
  provider: string | null;
  model: string | null;
  usage: Usage | null;
  costUsd: number | null;
  createdAt: string;
}
export interface VillageView {
  settings: {
    defaultProvider: string | null;
    defaultModel: string | null;
    hopLimit: number;
    historyBudget: number;
    sandboxQuotaMb: number;
    turnsPerMinute: number;
    concurrentStreams: number;
    playerDailyTokens: number;
    villageDailyTokens: number;
    maxMessageChars: number;
    maxNpcs: number;
    maxConversations: number;
  };
  providers: { id: string; kind: string }[];
  isAdmin: boolean;
}
export interface SignInOptions {
  network: 'local' | 'public';
  demoAccounts: { handle: string; password: string }[];
}
