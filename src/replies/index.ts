// replies/: replies in flight, followed and stopped from any tab, device or server instance (issue 17, ADR 0037).
export { type Numbered, ReplyHub, SHUTDOWN, type Snapshot } from './hub.ts';
export { ReplyMirror } from './mirror.ts';
export { type ReplyRouteDeps, replyRoutes } from './routes.ts';
