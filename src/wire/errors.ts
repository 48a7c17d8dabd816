import { z } from 'zod';
import { FRAME_ERROR_CODES, type FrameErrorCode } from '../parts/index.ts';

/**
 * The error catalog: every code an HTTP answer carries, and the status it answers with. `AppError` (http/) looks
 * the status up here, so no store or route chooses an HTTP number, and the web app types `ApiError.code` with
 * it. A code with two statuses lists both, the usual one first; the thrower names which (`{ status }`), from
 * these only. docs/http-api.md's error table lists exactly these (test/wire/errors.test.ts).
 *
 * To add a code: a line here, a row in the docs' table. The last group answers XRPC in the spec's shape
 * (`{error, message}`), named as the spec names them.
 */
export const ERRORS = {
  // Signing in and sessions
  UNAUTHENTICATED: 401,
  SESSION_ENDED: 401,
  ACCOUNT_NOT_FOUND: 400,
  PDS_UNREACHABLE: 502,
  SIGN_IN_BUSY: 503,
  FORBIDDEN: 403,
  PLAYER_BLOCKED: 403,
  // Any request
  INVALID_BODY: 400,
  BODY_TOO_LARGE: 413,
  JSON_TOO_MANY_VALUES: 413,
  JSON_TEXT_TOO_LONG: 413,
  INVALID_QUERY: 400,
  NOT_FOUND: 404,
  RATE_LIMITED: 429,
  /** 429: the line is full; 503: no slot came free in time. */
  BUSY: [429, 503],
  /** Nginx's number: the client went away while it waited; nobody reads this answer. */
  CLIENT_CLOSED: 499,
  INTERNAL: 500,
  /** The database cannot be reached just now (a restart, a failover, every connection taken). */
  DATABASE_UNAVAILABLE: 503,
  // Village, NPCs, Providers
  SECRETS_KEY_MISSING: 503,
  PROVIDER_NOT_CONFIGURED: 400,
  MODEL_UNRESOLVED: 400,
  UNKNOWN_NPC: 400,
  UNKNOWN_GRANT: 400,
  TOO_MANY_NPCS: 429,
  // Conversations and turns
  NO_NPC: 400,
  NPC_NOT_IN_CONVERSATION: 400,
  MESSAGE_TOO_LONG: 400,
  NOTHING_TO_REGENERATE: 400,
  TURN_IN_PROGRESS: 409,
  TOO_MANY_STREAMS: 429,
  TOKEN_BUDGET: 429,
  VILLAGE_TOKEN_BUDGET: 429,
  TOO_MANY_CONVERSATIONS: 429,
  TOO_MANY_FOLLOWERS: 429,
  SHUTTING_DOWN: 503,
  SEARCH_TOO_BROAD: 503,
  EXPORT_EMPTY: 400,
  IMPORT_TOO_SLOW: 503,
  // Tools, Skills, Memory
  TOO_MANY_MCP_SERVERS: 400,
  TOO_MANY_SKILLS: 429,
  TOO_MANY_MEMORIES: 429,
  DUPLICATE: 409,
  URL_NOT_ALLOWED: 400,
  // Character cards and lorebooks
  CARD_EMPTY: 400,
  CARD_UNREADABLE: 400,
  NOT_A_CARD: 400,
  CARD_TOO_LONG: 422,
  CARD_TOO_LARGE: 413,
  WORLD_INFO: 422,
  CARD_ALREADY_IMPORTED: 409,
  NOT_A_LOREBOOK: 400,
  LOREBOOK_TOO_LARGE: 413,
  UNKNOWN_LOREBOOK: 400,
  TOO_MANY_LOREBOOKS: 429,
  // Attachments and storage
  ATTACHMENT_TOO_LARGE: 413,
  ATTACHMENT_QUOTA: 413,
  STORAGE_FULL: 507,
  UNSUPPORTED_ATTACHMENT_TYPE: 415,
  ATTACHMENT_EMPTY: 400,
  UPLOAD_TIMEOUT: 408,
  TOO_MANY_PENDING: 409,
  TOO_MANY_UPLOADS: 429,
  ATTACHMENT_NOT_FOUND: 400,
  TOO_MANY_ATTACHMENTS: 400,
  ATTACHMENT_SENT: 409,
  PAGE_UNREACHABLE: 502,
  PAGE_NOT_TEXT: 415,
  PAGE_EMPTY: 422,
  PAGE_UNREADABLE: 422,
  // Publishing and moderation
  NOTHING_TO_PUBLISH: 400,
  PUBLISH_PROBLEMS: 400,
  RATE_LIMIT_BUDGET: 400,
  CONVERSATION_CHANGED: 409,
  TOO_MANY_REDACTIONS: 422,
  /** 502: the PDS failed part-way; 429: it asked us to slow down. Either way the plan is stored and resumes. */
  PUBLISH_INCOMPLETE: [502, 429],
  PUBLICATION_BUSY: 503,
  PUBLISHED: 409,
  ALREADY_PUBLISHED: 409,
  /** 409: holding turns of a Conversation never published; 404: unpublishing one. */
  NOT_PUBLISHED: [409, 404],
  ALREADY_TAKEN_DOWN: 409,
  ALREADY_BLOCKED: 409,
  // XRPC (the AppView's public queries), in the spec's shape
  InvalidRequest: 400,
  NotFound: 400,
  INDEXING: 404,
  RateLimitExceeded: 429,
  InternalServerError: 500,
  /** The database cannot be reached just now. */
  NotEnoughResources: 503,
} as const satisfies Record<string, number | readonly [number, ...number[]]>;

/** A code an HTTP error answer carries. */
export type HttpErrorCode = keyof typeof ERRORS;

/** Every code: an HTTP answer's, and an SSE error frame's (those are a subset, declared beside the frame). */
export type ErrorCode = HttpErrorCode | FrameErrorCode;
export { FRAME_ERROR_CODES, type FrameErrorCode };

type Entry<C extends HttpErrorCode> = (typeof ERRORS)[C];
/** The statuses a code may answer with. */
export type StatusOf<C extends HttpErrorCode> = Entry<C> extends readonly (infer S)[] ? S : Entry<C>;
/** The statuses a thrower may choose for a code: only a code with more than one has any. */
export type StatusChoice<C extends HttpErrorCode> =
  Entry<C> extends readonly (infer S extends number)[] ? S : never;

/** Each code's statuses, the usual one first. */
export const statusesOf = (code: HttpErrorCode): readonly number[] => {
  const entry: number | readonly number[] = ERRORS[code];
  return typeof entry === 'number' ? [entry] : entry;
};

/** The status `code` answers with: `chosen` when the catalog allows it for this code, else the usual one. */
export function statusOf(code: HttpErrorCode, chosen?: number): number {
  const statuses = statusesOf(code);
  return chosen !== undefined && statuses.includes(chosen) ? chosen : statuses[0]!;
}

export const HTTP_ERROR_CODES = Object.keys(ERRORS) as [HttpErrorCode, ...HttpErrorCode[]];

/** An HTTP error code on the wire, for a reader that checks what it is told. */
export const HttpErrorCodeSchema = z.enum(HTTP_ERROR_CODES);

export const isHttpErrorCode = (code: unknown): code is HttpErrorCode =>
  typeof code === 'string' && Object.hasOwn(ERRORS, code);
