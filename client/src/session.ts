/**
 * Whether the server has said this browser's session is over (a 401 from any API call): the app then shows the
 * sign-in page once, in place of everything, instead of an error beside each piece that asked. Set by api.ts
 * and stream.ts; cleared only by the full page load that follows signing in again. (No React here: api.ts is
 * also read by the server's type check.)
 */
export interface SessionEnd {
  code: string;
  message: string;
}

let ended: SessionEnd | null = null;
const listeners = new Set<() => void>();

export function sessionEnded(end: SessionEnd): void {
  if (ended) return;
  ended = end;
  for (const l of listeners) l();
}

/** For useSyncExternalStore: subscribe, and read the current state. */
export function onSessionEnd(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
export const sessionEnd = (): SessionEnd | null => ended;
