import { z } from 'zod';
import type { UsageSchema } from '../../src/parts/index.ts';
import type {
  ConversationListItem,
  ConversationView,
  MeResponse,
  MessageView,
  NpcView,
  SignInOptions,
  VillageView,
} from '../../src/wire/index.ts';

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

/** POSTs a file's bytes as they are (an upload, an import), and decodes the answer like `fetchAs`. */
export async function sendFile<S extends z.ZodType>(
  schema: S,
  path: string,
  file: Blob,
  signal?: AbortSignal,
): Promise<z.output<S>> {
  const res = await fetch(path, {
    method: 'POST',
    // Bytes, not JSON (whatever the file is): the intent header stands in for the JSON content type.
    headers: { 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body: file,
    signal,
  });
  const body = (await res.json().catch(() => null)) as {
    error?: { code: string; message: string; details?: unknown };
  } | null;
  if (!res.ok)
    throw new ApiError(
      res.status,
      body?.error?.code ?? 'HTTP_ERROR',
      body?.error?.message ?? `The server answered ${res.status}.`,
      body?.error?.details,
    );
  const decoded = z.safeDecode(schema, body as z.input<S>);
  if (!decoded.success)
    throw new ApiError(
      200,
      'UNEXPECTED_RESPONSE',
      'The server answered in a form this page does not understand.',
    );
  return decoded.data;
}

/**
 * GET (or send) and decode the answer through its wire schema (src/wire/, the one the route encodes with):
 * times become Dates, and an answer that does not fit the contract is an error the page can show, not a
 * field that is silently undefined further down.
 */
export async function fetchAs<S extends z.ZodType>(
  schema: S,
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<z.output<S>> {
  const body = await api<unknown>(path, init);
  const decoded = z.safeDecode(schema, body as z.input<S>);
  if (!decoded.success) {
    throw new ApiError(
      200,
      'UNEXPECTED_RESPONSE',
      'The server answered in a form this page does not understand. Reload the page; if it persists, the server and this page are of different versions.',
      decoded.error.issues,
    );
  }
  return decoded.data;
}

export type Me = MeResponse;
export type Npc = NpcView;
export type Conversation = ConversationView & Partial<Pick<ConversationListItem, 'npcIds' | 'publication'>>;
export type Usage = z.output<typeof UsageSchema>;
export type Message = MessageView;
export type { SignInOptions, VillageView };
