import { APICallError, InvalidResponseDataError, RetryError } from 'ai';

/** A failed reply as the Player is told it: a stable code for the error frame and a sentence. */
export interface Failure {
  code:
    | 'PROVIDER_AUTH'
    | 'PROVIDER_RATE_LIMITED'
    | 'PROVIDER_OVERLOADED'
    | 'CONTEXT_TOO_LONG'
    | 'MODEL_NOT_FOUND'
    | 'PROVIDER_BLOCKED'
    | 'PROVIDER_UNFINISHED'
    | 'PROVIDER_ERROR';
  message: string;
}

const CONTEXT =
  /context.{0,20}(length|window|limit)|too many tokens|prompt is too long|maximum.{0,30}tokens|input.{0,20}too long|exceeds.{0,30}(token|context)/i;
const OVERLOADED = /overloaded|unavailable|capacity/i;

/**
 * What a Provider's failure means for the Player, named after the Provider (the NPC's Provider id). The AI SDK
 * has already retried what is worth retrying — 408, 409, 429 and 5xx (529 included), with backoff and the
 * Provider's Retry-After — before the first token; a RetryError carries the attempts and the last error. Pure.
 */
export function describeFailure(error: unknown, provider: string, model: string): Failure {
  const attempts = RetryError.isInstance(error) ? error.errors.length : 1;
  const last = RetryError.isInstance(error) ? error.lastError : error;
  const still = attempts > 1 ? `, still after ${attempts} tries` : '';
  const status = APICallError.isInstance(last) ? last.statusCode : undefined;
  const detail = providerMessage(last);
  // The Provider's own words, kept (never for a refused key: some Providers echo part of it back).
  const said = detail ? ` (${status ? `${status}: ` : ''}${detail})` : status ? ` (${status})` : '';
  // The OpenAI-compatible provider's own word for a stream that ended before its finish chunk (issue 27).
  if (InvalidResponseDataError.isInstance(last) && /without a finish reason/i.test(last.message))
    return unfinished(provider);
  if (status === 401 || status === 403) {
    return {
      code: 'PROVIDER_AUTH',
      message: `The Provider "${provider}" refused this Village's API key (${status}). A Village admin needs to check the key.`,
    };
  }
  if (status === 429) {
    return {
      code: 'PROVIDER_RATE_LIMITED',
      message: `The Provider "${provider}" is limiting requests${said}${still}. Try again in a minute.`,
    };
  }
  // The words decide only when there is no status (an error event inside the stream).
  if (
    (status !== undefined && status >= 500 && status !== 501) ||
    (status === undefined && OVERLOADED.test(detail))
  ) {
    return {
      code: 'PROVIDER_OVERLOADED',
      message: `The Provider "${provider}" is overloaded or unavailable${said}${still}. Try again shortly.`,
    };
  }
  if ((status === 400 || status === 413 || status === undefined) && CONTEXT.test(detail)) {
    return {
      code: 'CONTEXT_TOO_LONG',
      message: `This Conversation is longer than the Model "${model}" accepts${said}. A Village admin can lower the history budget, or start a new Conversation.`,
    };
  }
  if (status === 404) {
    return {
      code: 'MODEL_NOT_FOUND',
      message: `The Provider "${provider}" does not offer the Model "${model}"${said}. Choose another Model for this NPC.`,
    };
  }
  // A 200 that fails later is a stream that broke after it began.
  if (status === 200) {
    return { code: 'PROVIDER_ERROR', message: `The connection to the Provider broke mid-reply (${detail}).` };
  }
  if (status)
    return { code: 'PROVIDER_ERROR', message: `The Provider "${provider}" answered ${status}: ${detail}` };
  // Not an answer from the Provider: the connection failed, before the request or during the stream.
  if (last instanceof TypeError) {
    return {
      code: 'PROVIDER_ERROR',
      message: `The connection to the Provider "${provider}" failed or broke (${detail}). What arrived is kept.`,
    };
  }
  return {
    code: 'PROVIDER_ERROR',
    message: detail || `The Provider "${provider}" failed without saying why.`,
  };
}

/** A reply the Provider stopped itself: a safety filter or a refusal (the AI SDK's `content-filter`). */
export function blocked(provider: string, hadText: boolean): Failure {
  // Said without guessing whether text was cut: a refusal may be the whole of the text.
  return {
    code: 'PROVIDER_BLOCKED',
    message: `The Provider "${provider}" ended this reply itself (a safety filter or a refusal)${hadText ? '; what it sent is kept' : ''}.`,
  };
}

/** A reply the Provider ended without its end (no finish, or one that says it did not finish). */
export function unfinished(provider: string): Failure {
  return {
    code: 'PROVIDER_UNFINISHED',
    message: `The Provider "${provider}" ended the reply without finishing it; what arrived is kept. Try again.`,
  };
}

/**
 * The Provider's own words for a failure, whatever shape it came in (an HTTP error, a stream error object,
 * text) — clipped, with any credentials in a URL removed. fetch's own failures (a refused connection, a
 * broken socket, a malformed URL) are named by their code only: their message can hold the endpoint's address
 * or a key in its URL, which every Player would see.
 */
function providerMessage(error: unknown): string {
  return clip(rawMessage(error)).replace(/\/\/[^/@\s]+@/g, '//');
}
const clip = (s: string) => (s.length > 300 ? `${s.slice(0, 299)}…` : s);
function rawMessage(error: unknown): string {
  // fetch's own failures are TypeErrors ("fetch failed", "terminated", a URL with credentials in it).
  if (error instanceof TypeError) {
    const code = (error.cause as { code?: unknown } | undefined)?.code;
    return typeof code === 'string' ? code : 'network error';
  }
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  const e = error as { message?: unknown; error?: { message?: unknown; type?: unknown } } | null;
  const message = e?.message ?? e?.error?.message;
  const type = e?.error?.type;
  return [typeof type === 'string' ? type : '', typeof message === 'string' ? message : '']
    .filter(Boolean)
    .join(': ');
}
