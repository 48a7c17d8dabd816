import { z } from 'zod';
import type { UsageSchema } from '../../src/parts/index.ts';
import {
  type ConversationListItem,
  type ConversationView,
  type HttpErrorCode,
  isHttpErrorCode,
  type MeResponse,
  type MessageView,
  type NpcView,
  type SignInOptions,
  type VillageView,
} from '../../src/wire/index.ts';
import { sessionEnded } from './session.ts';

/**
 * An error's code: one of the server's catalog (src/wire/errors.ts), or one of the browser's own — the server
 * could not be reached, answered without a code of ours (a proxy's page), or answered outside the contract.
 */
export type ApiErrorCode = HttpErrorCode | 'UNREACHABLE' | 'HTTP_ERROR' | 'UNEXPECTED_RESPONSE';

/** The one place the browser talks JSON to the server. Errors carry the server's code and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode,
    message: string,
    /** What the server attached (e.g. PUBLISH_PROBLEMS' list of problems). */
    readonly details?: unknown,
  ) {
    super(message);
  }
}

/** A status with no message from the app (a proxy's page, a server that broke): a sentence for people. */
export function unexplained(status: number): string {
  if (status === 413) return 'That is larger than the server accepts.';
  if (status === 429) return 'Too many requests at once. Wait a moment, then try again.';
  if (status >= 500)
    return `The server could not answer (${status}). Try again in a moment; if it keeps happening, it may be restarting.`;
  return `The server refused this (${status}). Reload the page and try again.`;
}

/** fetch, with "Failed to fetch" (offline, server down) said as what it means. A Stop (abort) passes through. */
export async function reach(path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(path, init);
  } catch (e) {
    if (e instanceof TypeError)
      throw new ApiError(
        0,
        'UNREACHABLE',
        'AgentsVille could not be reached. Check your connection, then try again.',
      );
    throw e;
  }
}

type ErrorBody = { error?: { code?: unknown; message: string; details?: unknown } } | null;

/** An answer's JSON; null when it has none (a proxy's HTML page, an empty body). */
const jsonOf = (res: Response): Promise<unknown> => res.json().catch(() => null);

/** The error for a refused answer (a stream's too), from its body. */
export async function refusalOf(res: Response): Promise<ApiError> {
  return refusal(res.status, (await jsonOf(res)) as ErrorBody);
}

/**
 * The error for a refused answer. A 401 also tells the app the session is over (session.ts): one sign-in page
 * instead of an error beside each piece that asked.
 */
export function refusal(status: number, body: ErrorBody): ApiError {
  const code = body?.error?.code;
  const error = new ApiError(
    status,
    isHttpErrorCode(code) ? code : 'HTTP_ERROR',
    body?.error?.message ?? unexplained(status),
    body?.error?.details,
  );
  if (status === 401) sessionEnded({ code: error.code, message: error.message });
  return error;
}

/** What a call may say besides its path: a method, a JSON body, a signal, and how the browser's cache is used. */
type CallInit = { method?: string; body?: unknown; signal?: AbortSignal; cache?: 'no-cache' };

/** One request: the answer's JSON (undefined for a 204), or the server's refusal thrown as an ApiError. */
async function request(path: string, init: CallInit = {}): Promise<unknown> {
  const res = await reach(path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    // (The browser's RequestInit has `cache`; the server's type check reads this file with Node's, which has not.)
    ...({ cache: init.cache } as RequestInit),
    // The server refuses a change that carries neither JSON nor this header (see http/security.ts).
    headers: init.body === undefined ? { 'x-agentsville': '1' } : { 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: init.signal,
  });
  if (res.status === 204) return undefined;
  const body = await jsonOf(res);
  if (!res.ok) throw refusal(res.status, body as ErrorBody);
  return body;
}

/**
 * Sends a change whose answer the page does not read (a 204, or a change the page refetches after): it resolves
 * once the server accepted it, with nothing to decode. An answer the page reads goes through `fetchAs`.
 */
export async function api(
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<void> {
  await request(path, init);
}

/**
 * POSTs a file's bytes as they are (an upload, an import), and decodes the answer like `fetchAs`. A PUT (a
 * lorebook saved past the 1 MB JSON body) sends its JSON this way too.
 */
export async function sendFile<S extends z.ZodType>(
  schema: S,
  path: string,
  file: Blob,
  signal?: AbortSignal,
  method: 'POST' | 'PUT' = 'POST',
): Promise<z.output<S>> {
  const res = await reach(path, {
    method,
    // Bytes, not JSON (whatever the file is): the intent header stands in for the JSON content type.
    headers: { 'content-type': 'application/octet-stream', 'x-agentsville': '1' },
    body: file,
    signal,
  });
  const body = await jsonOf(res);
  if (!res.ok) throw refusal(res.status, body as ErrorBody);
  return decode(schema, body);
}

/**
 * GET (or send) and decode the answer through its wire schema (src/wire/, the one the route encodes with):
 * times become Dates, and an answer that does not fit the contract is an error the page can show, not a
 * field that is silently undefined further down.
 */
export async function fetchAs<S extends z.ZodType>(
  schema: S,
  path: string,
  init: CallInit = {},
): Promise<z.output<S>> {
  return decode(schema, await request(path, init));
}

/** An answer through its wire schema; one that does not fit is UNEXPECTED_RESPONSE, with zod's issues. */
function decode<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
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
