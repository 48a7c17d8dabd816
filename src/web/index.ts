// web/: serves the Player's web app (client/, built into dist/client) and its sign-in options.
export type { ReaderSource } from './readerPages.ts';
export { CLIENT_DIR, type DemoAccountInfo, type WebDeps, webRoutes } from './spa.ts';
