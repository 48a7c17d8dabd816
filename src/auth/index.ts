// auth/: who is asking. ATProto OAuth (client, PostgreSQL stores, advisory request lock), the web session
// (an opaque cookie, only its hash stored) and the Players it maps to.
export { createOAuthClient, OAUTH_SCOPE, type OAuthOptions } from './oauth.ts';
export { currentPlayer, playerKey, requireSession } from './requireSession.ts';
export { restoreSession } from './restore.ts';
export { type AuthDeps, publicAuthRoutes, sessionAuthRoutes } from './routes.ts';
export {
  createSession,
  endSessions,
  findSession,
  type Player,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  upsertPlayer,
} from './sessions.ts';
