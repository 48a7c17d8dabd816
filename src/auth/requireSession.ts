import { parseCookie } from 'cookie';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Sql } from '../db/index.ts';
import { unauthenticated } from '../http/index.ts';
import { findSession, type Player, SESSION_COOKIE } from './sessions.ts';

/** The session cookie's token, if the request carries one. */
export const sessionToken = (req: Request): string | undefined =>
  parseCookie(req.headers.cookie ?? '')[SESSION_COOKIE];

/** Resolves the session cookie to its Player (res.locals.player), or answers 401. */
export function requireSession(sql: Sql): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    const token = sessionToken(req);
    const player = token ? await findSession(sql, token) : undefined;
    if (!player) throw unauthenticated();
    res.locals.player = player;
    next();
  };
}

export function currentPlayer(res: Response): Player {
  const player = res.locals.player as Player | undefined;
  if (!player) throw unauthenticated();
  return player;
}

/** The signed-in Player's id as a limiter's key (rate and in-flight limits are per Player). */
export const playerKey = (_req: unknown, res: Response): string => currentPlayer(res).id;
