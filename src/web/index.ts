// web/: what the server renders for browsers (the front door until the Player's web app lands).
export { type DemoAccountInfo, landingRoutes } from './landing.ts';
