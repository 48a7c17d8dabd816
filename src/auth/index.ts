// auth/: who is asking. Web sessions (an opaque cookie, only its hash stored) and the Players they map to.
export { currentPlayer, requireSession } from './requireSession.ts';
export {
  createSession,
  deleteSession,
  findSession,
  type Player,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  upsertPlayer,
} from './sessions.ts';
