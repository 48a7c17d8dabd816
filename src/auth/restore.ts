import { isExpectedSessionError, type NodeOAuthClient, OAuthResponseError } from '@atproto/oauth-client-node';
import { AppError } from '../http/index.ts';
import { asPlayer } from './playerCalls.ts';
import { replacedElsewhere, SignInBusyError } from './stores.ts';

/**
 * How long a restore waits, twice, for a grant found gone to be stored again: a sign-in on another device revokes
 * it, deletes it and stores the new one a round trip later. Without the wait, a request landing in between signed
 * the first device out.
 */
export const REPLACED_WAITS_MS = [150, 600];

/** A Player's session as an Agent takes it: every call through it counts as the Player's (playerCalls.ts). */
export interface PlayerSession {
  readonly did: string;
  fetchHandler(url: string, init?: RequestInit): Promise<Response>;
}

/**
 * Loads (and refreshes when due) a Player's OAuth session, telling apart a sign-in that has ended from a PDS
 * that could not be reached. Only the OAuth client's token errors (refresh refused, revoked, invalid, or no
 * session stored) end a sign-in; a timeout or a 5xx on the way keeps everything and answers 502, so a network
 * blip never signs anyone out.
 */
export async function restoreSession(
  oauth: NodeOAuthClient,
  did: string,
  action: string,
): Promise<PlayerSession> {
  try {
    const session = await waitingForReplacement(() => asPlayer(did, () => oauth.restore(did, 'auto')));
    // Each call reads the grant again: one may land in the same instant, before the request is sent (so it can be
    // made again).
    return {
      did,
      fetchHandler: (url, init) =>
        waitingForReplacement(() => asPlayer(did, () => session.fetchHandler(url, init))),
    };
  } catch (e) {
    if (e instanceof SignInBusyError) {
      throw new AppError(
        'SIGN_IN_BUSY',
        `Your sign-in is being renewed with your PDS and that is taking long. Try again in a minute to ${action}.`,
        { retryAfter: 30, cause: e },
      );
    }
    if (isSessionEnded(e)) {
      throw new AppError(
        'SESSION_ENDED',
        `Your sign-in with your PDS has ended. Sign in again to ${action}.`,
        {
          cause: e,
        },
      );
    }
    // The cause is for the log only: the client sees the message, never the cause.
    throw new AppError(
      'PDS_UNREACHABLE',
      `We could not reach your PDS to ${action}. Your sign-in is kept; try again in a moment.`,
      { cause: e },
    );
  }
}

/** `step`, made again after each of REPLACED_WAITS_MS while it finds the grant gone (it is thrown before any send). */
async function waitingForReplacement<T>(step: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await step();
    } catch (e) {
      const wait = REPLACED_WAITS_MS[i];
      if (!replacedElsewhere(e) || wait === undefined) throw e;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

export function isSessionEnded(e: unknown): boolean {
  // The library's own classification (refresh refused, revoked, invalid, nothing stored), and any definite
  // refusal from the authorization server (a 4xx); a 5xx, a timeout or no answer at all is not an ending.
  return isExpectedSessionError(e) || (e instanceof OAuthResponseError && e.status >= 400 && e.status < 500);
}
