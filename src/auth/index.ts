// auth/: who is asking. ATProto OAuth (client, PostgreSQL stores, the request lock as a lease, the per-Player
// cap on calls to a Player's own servers), the web session (an opaque cookie, only its hash stored) and the
// Players it maps to.
export { createOAuthClient, OAUTH_SCOPE, type OAuthOptions } from './oauth.ts';
export {
  asPlayer,
  PLAYER_CALL_LIMITS,
  type PlayerCallLimits,
  PlayerCallsBusyError,
  playerCallFetch,
} from './playerCalls.ts';
export { playerDid, playerIdOfDid } from './players.ts';
export { currentPlayer, playerKey, requireSession, sessionToken } from './requireSession.ts';
export { type PlayerSession, restoreSession } from './restore.ts';
export { type AuthDeps, publicAuthRoutes, sessionAuthRoutes } from './routes.ts';
export {
  createSession,
  endSessions,
  findSession,
  type Player,
  playerNamed,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  sessionPlayerJsonSql,
  sessionPlayerSql,
  upsertPlayer,
} from './sessions.ts';
export { OAUTH_LEASE } from './stores.ts';
