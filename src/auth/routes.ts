import { randomBytes, timingSafeEqual } from 'node:crypto';
import { type NodeOAuthClient, OAuthCallbackError, OAuthResolverError } from '@atproto/oauth-client-node';
import { isValidDid, isValidHandle } from '@atproto/syntax';
import { parseCookie } from 'cookie';
import { type Response, Router } from 'express';
import { z } from 'zod';
import type { Sql } from '../db/index.ts';
import { AppError, escapeHtml, parseBody, respond } from '../http/index.ts';
import { LoginResponse, MeResponse } from '../wire/index.ts';
import { asPlayer } from './playerCalls.ts';
import { currentPlayer } from './requireSession.ts';
import { restoreSession } from './restore.ts';
import { MAX_RETURN_PATH, returnPath } from './returnPath.ts';
import {
  createSession,
  endSession,
  endSessions,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  upsertPlayer,
} from './sessions.ts';

const LoginBody = z
  .object({
    identifier: z
      .string()
      .trim()
      .min(1, 'enter your handle')
      .max(300)
      .transform((s) => s.replace(/^@/, ''))
      .refine(
        (s) => isValidHandle(s) || isValidDid(s) || /^https?:\/\/[^\s]+$/.test(s),
        'enter a handle (alice.bsky.social), a DID, or your PDS address (https://…)',
      ),
    /** The page to come back to once signed in (a path on this site; anything else is refused). */
    returnTo: z
      .string()
      .max(MAX_RETURN_PATH)
      .transform((p, ctx) => {
        const path = returnPath(p);
        if (path === null) {
          ctx.addIssue({ code: 'custom', message: 'returnTo must be a path on this site, such as /c/…' });
          return z.NEVER;
        }
        return path;
      })
      .optional(),
  })
  .strict();

/**
 * What the OAuth client keeps server-side for one sign-in (its `state`, handed back at the callback): the nonce
 * also held in this browser's cookie, and the page to return to.
 */
const LoginState = z.object({ nonce: z.string(), returnTo: z.string().optional() });
function readState(state: string | null | undefined): z.infer<typeof LoginState> | undefined {
  if (!state) return undefined;
  try {
    const parsed = LoginState.safeParse(JSON.parse(state));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export interface AuthDeps {
  sql: Sql;
  oauth: NodeOAuthClient;
  secureCookies: boolean;
  log: (message: string, error?: unknown) => void;
  /** Offline mode: only the local PDS's accounts exist, and a refused sign-in says so. */
  localNetwork?: boolean;
  demoAccounts?: { handle: string }[];
}

/** Sign-in routes that need no session: client metadata, JWKS, login and the OAuth callback. */
export function publicAuthRoutes(deps: AuthDeps): Router {
  const router = Router();

  router.get('/oauth-client-metadata.json', (_req, res) => {
    res.json(deps.oauth.clientMetadata);
  });
  router.get('/.well-known/jwks.json', (_req, res) => {
    res.json(deps.oauth.jwks);
  });

  router.post('/api/auth/login', async (req, res) => {
    const { identifier, returnTo } = parseBody(req, LoginBody);
    // The sign-in is bound to this browser: a nonce in the OAuth state and in a short-lived cookie, compared at
    // the callback. Someone else's unfinished callback URL, opened here, signs nobody in (login CSRF).
    const nonce = randomBytes(24).toString('base64url');
    try {
      const url = await deps.oauth.authorize(identifier, {
        signal: AbortSignal.timeout(15_000),
        state: JSON.stringify({ nonce, returnTo }),
      });
      res.cookie(LOGIN_COOKIE, nonce, {
        httpOnly: true,
        sameSite: 'lax',
        secure: deps.secureCookies,
        path: '/oauth',
        maxAge: LOGIN_TTL_MS,
      });
      respond(res, LoginResponse, { url: url.toString() });
    } catch (e) {
      throw loginError(identifier, e, deps.localNetwork ? (deps.demoAccounts ?? []) : undefined);
    }
  });

  router.get('/oauth/callback', async (req, res) => {
    const params = new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
    const started = parseCookie(req.headers.cookie ?? '')[LOGIN_COOKIE];
    if (started) res.clearCookie(LOGIN_COOKIE, { path: '/oauth' });
    try {
      const { session, state: kept } = await deps.oauth.callback(params);
      const state = readState(kept);
      if (!started || !state || !sameNonce(started, state.nonce)) {
        // The tokens just issued belong to whoever started this sign-in elsewhere: they are given back.
        await asPlayer(session.did, () => deps.oauth.revoke(session.did)).catch(() => {});
        res
          .status(400)
          .type('html')
          .send(
            errorPage(
              'This sign-in was not started in this browser, so it does not sign you in here. Start again from AgentsVille.',
            ),
          );
        return;
      }
      const handle = await asPlayer(session.did, () => verifiedHandle(deps.oauth, session.did));
      const player = await upsertPlayer(deps.sql, session.did, handle);
      setSessionCookie(res, await createSession(deps.sql, player.id), deps.secureCookies);
      // Back where the Player was (checked again: the state was written by this server, but cheaply so).
      res.redirect(303, (state.returnTo && returnPath(state.returnTo)) || '/');
    } catch (e) {
      const failure = callbackError(e);
      if (failure.status >= 500) deps.log('oauth callback failed', e);
      res.status(failure.status).type('html').send(errorPage(failure.message));
    }
  });

  return router;
}

/** Routes for a signed-in Player: who am I, and sign out (which revokes the OAuth session). */
export function sessionAuthRoutes(deps: AuthDeps): Router {
  const router = Router();

  router.get('/me', async (_req, res) => {
    const player = currentPlayer(res);
    // Loads (and refreshes when due) the OAuth session: one revoked or expired elsewhere surfaces here.
    // A web session is only ever made by a callback, and a grant that ends for good ends its web sessions
    // (stores.ts: endedGrant): a Player without one is a grant being replaced by a sign-in on another device
    // this instant, or a session made directly (tests, admin tools).
    const [held] = await deps.sql`select 1 from oauth_sessions where did = ${player.did}`;
    if (held) {
      await restoreSession(deps.oauth, player.did, 'continue').catch(async (e: unknown) => {
        deps.log('oauth session not restored', (e as Error).cause ?? e);
        // Only an ended sign-in signs the Player out; an unreachable PDS keeps everything (502).
        if (e instanceof AppError && e.code === 'SESSION_ENDED') {
          await endSessions(deps.sql, player.id);
          res.clearCookie(SESSION_COOKIE, { path: '/' });
          throw new AppError(
            'SESSION_ENDED',
            'Your sign-in with your PDS has ended (it was revoked or expired). Sign in again to continue.',
          );
        }
        throw e;
      });
    }
    respond(res, MeResponse, { did: player.did, handle: player.handle });
  });

  router.post('/auth/logout', async (req, res) => {
    const player = currentPlayer(res);
    const token = parseCookie(req.headers.cookie ?? '')[SESSION_COOKIE] ?? '';
    // Signing out here ends this device's session. The grant at the PDS is shared by the Player's other
    // devices: it is revoked only when none is left signed in.
    const { remaining } = await endSession(deps.sql, token);
    if (remaining === 0)
      await asPlayer(player.did, () => deps.oauth.revoke(player.did)).catch((e) =>
        deps.log('revoke failed', e),
      );
    res.clearCookie(SESSION_COOKIE, { path: '/' });
    res.status(204).end();
  });

  return router;
}

const LOGIN_COOKIE = 'av_login';
const LOGIN_TTL_MS = 15 * 60 * 1000;

const sameNonce = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

function setSessionCookie(res: Response, token: string, secure: boolean) {
  res.cookie(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'lax',
    secure,
    path: '/',
    maxAge: SESSION_TTL_MS,
  });
}

/**
 * The Player's handle as the network vouches for it: the one their DID document names, and only when that handle
 * resolves back to the same DID (the OAuth client's identity resolver checks both ways); else null, and undefined
 * when their DID document could not be read just now. Never what their PDS says of itself: any account can sign
 * in from a PDS its owner runs, and that PDS may claim any name (`bsky.app`, another Player's) for it,
 * `handleIsCorrect` included.
 */
export async function verifiedHandle(
  oauth: Pick<NodeOAuthClient, 'identityResolver'>,
  did: string,
): Promise<string | null | undefined> {
  try {
    const { handle } = await oauth.identityResolver.resolve(did as `did:plc:${string}`, {
      signal: AbortSignal.timeout(HANDLE_LOOKUP_MS),
    });
    return handle !== 'handle.invalid' && isValidHandle(handle) ? handle : null;
  } catch {
    return undefined;
  }
}

/** A sign-in waits this long at most for the handle (the DID document is usually cached by the callback). */
const HANDLE_LOOKUP_MS = 10_000;

/** In offline mode a handle that does not resolve is one from elsewhere (Bluesky): say which ones exist. */
function offlineLoginError(identifier: string, accounts: { handle: string }[]): AppError {
  const names = accounts.map((a) => a.handle).join(', ');
  return new AppError(
    'ACCOUNT_NOT_FOUND',
    `“${identifier}” is not an account on this machine. AgentsVille is running in offline mode, where only ` +
      `its local demo accounts exist${names ? ` (${names})` : ''}: sign in with one of them. To sign in with ` +
      'a Bluesky account, start AgentsVille with ATPROTO_NETWORK=public.',
  );
}

/** `offline`: the local accounts, in offline mode (an unknown handle is then one from elsewhere). */
function loginError(identifier: string, e: unknown, offline?: { handle: string }[]): AppError {
  if (e instanceof OAuthResolverError) {
    if (e.message.startsWith('Failed to resolve OAuth server metadata')) {
      return new AppError(
        'PDS_UNREACHABLE',
        `We could not reach the server for “${identifier}”. Try again later.`,
      );
    }
    if (networkFailure(e.cause)) {
      return new AppError(
        'PDS_UNREACHABLE',
        `We could not look up “${identifier}” right now. Try again later.`,
      );
    }
    if (offline) return offlineLoginError(identifier, offline);
    return new AppError(
      'ACCOUNT_NOT_FOUND',
      `We could not find an account for “${identifier}”. Check the handle (for example alice.bsky.social, ` +
        'without the @), or enter your PDS address (https://…).',
    );
  }
  return new AppError('PDS_UNREACHABLE', `We could not start signing in with ${identifier}'s server.`);
}

/** A fetch that never got an answer (refused, unreachable, timed out) somewhere down the cause chain. */
function networkFailure(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (/fetch failed|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|timed? ?out/i.test(e.message)) return true;
  }
  return false;
}

function callbackError(e: unknown): { status: number; message: string } {
  if (e instanceof OAuthCallbackError) {
    if (e.params.get('error') === 'access_denied') {
      return {
        status: 400,
        message: 'You declined to let AgentsVille use your account, so you are not signed in.',
      };
    }
    return { status: 400, message: `Signing in did not complete: ${e.message}. Please start again.` };
  }
  return { status: 400, message: 'This sign-in link is not valid or was already used. Please start again.' };
}

function errorPage(message: string): string {
  return `<!doctype html><meta charset="utf-8"><title>Sign-in failed · AgentsVille</title>
<main style="font:16px system-ui;max-width:32rem;margin:4rem auto"><h1>Sign-in failed</h1>
<p role="alert">${escapeHtml(message)}</p><p><a href="/">Back to AgentsVille</a></p></main>`;
}
