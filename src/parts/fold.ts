import { Part, type ToolPart } from './types.ts';

/**
 * The one fold that turns a stream of Part fragments into a Message's Parts, run on the server and again in
 * the browser so a reloaded transcript equals the streamed one (seed 003).
 *
 * - A text or reasoning fragment extends the run it belongs to: the last Part when it is of the same kind.
 * - A tool fragment lands on the call with the same id (later fields win), or starts a new call.
 * - An attachment (file or url) is added once: a second fragment with the same id replaces it in place.
 * - Anything that is not a Part this build knows is ignored, never fatal (ADR 0007).
 *
 * Returns a new array when something changed; untouched Parts are shared, so React can compare by identity.
 */
export function foldPart(parts: readonly Part[], fragment: unknown): Part[] {
  const part = asPart(fragment);
  if (!part) return parts as Part[];
  if (part.type === 'text' || part.type === 'reasoning') return appendRun(parts, part.type, part.text);
  if (part.type === 'file' || part.type === 'url') {
    const at = parts.findIndex((p) => p.type === part.type && p.id === part.id);
    if (at === -1) return [...parts, part];
    const next = parts.slice();
    next[at] = part;
    return next;
  }
  const index = findToolIndex(parts, part.id);
  if (index === -1) return [...parts, part];
  const merged = mergeTool(parts[index] as ToolPart, part);
  const next = parts.slice();
  next[index] = merged;
  return next;
}

/**
 * A text or reasoning delta, already storable (the server's hot path: a reply is thousands of these). The fold's
 * rule for them, without re-reading the fragment: the last Part grows when it is of the same kind, else a new
 * Part starts; empty text changes nothing. Copy on write, as foldPart: a snapshot handed out earlier (a viewer
 * attaching mid-reply, a checkpoint queued) keeps what it held.
 */
export function appendRun(parts: readonly Part[], type: 'text' | 'reasoning', text: string): Part[] {
  if (text === '') return parts as Part[];
  const next = parts.slice();
  const last = parts.at(-1);
  if (last && last.type === type) next[next.length - 1] = { type, text: last.text + text };
  else next.push({ type, text });
  return next;
}

export function foldParts(fragments: Iterable<unknown>, start: readonly Part[] = []): Part[] {
  let parts = start as Part[];
  for (const fragment of fragments) parts = foldPart(parts, fragment);
  return parts;
}

/** Stored Parts read back from the database: unknown kinds are dropped, the rest kept in order. */
export function readParts(stored: unknown): Part[] {
  if (!Array.isArray(stored)) return [];
  const parts: Part[] = [];
  for (const item of stored) {
    const parsed = Part.safeParse(item);
    if (parsed.success) parts.push(parsed.data);
  }
  return parts;
}

/** Text and reasoning deltas are most of a stream: checked by hand; everything else through the schema. */
function asPart(fragment: unknown): Part | undefined {
  const f = fragment as { type?: unknown; text?: unknown } | null;
  if (f && (f.type === 'text' || f.type === 'reasoning') && typeof f.text === 'string') {
    return { type: f.type, text: f.text };
  }
  const parsed = Part.safeParse(fragment);
  return parsed.success ? parsed.data : undefined;
}

function findToolIndex(parts: readonly Part[], id: string): number {
  for (let i = parts.length - 1; i >= 0; i--) {
    const p = parts[i];
    if (p && p.type === 'tool' && p.id === id) return i;
  }
  return -1;
}

function mergeTool(prev: ToolPart, next: ToolPart): ToolPart {
  // A finished call never goes back to running: a late duplicate fragment must not reopen it.
  const state = prev.state !== 'running' && next.state === 'running' ? prev.state : next.state;
  const name = next.name ?? prev.name;
  const description = next.description ?? prev.description;
  const input = next.input !== undefined ? next.input : prev.input;
  const output = next.output !== undefined ? next.output : prev.output;
  const error = next.error ?? prev.error;
  // No key for what neither has: the merged call reads as the stored one does (JSON keeps no undefined).
  return {
    type: 'tool',
    id: prev.id,
    ...(name !== undefined ? { name } : {}),
    ...(description ? { description } : {}),
    ...(input !== undefined ? { input } : {}),
    state,
    ...(output !== undefined ? { output } : {}),
    ...(error !== undefined ? { error } : {}),
  };
}

/** Why a call still running when its reply ended with `status` did not finish: its error once settled. */
export function unfinishedCall(
  status: 'complete' | 'truncated' | 'stopped' | 'failed' | 'interrupted',
): string {
  if (status === 'stopped') return 'Stopped before the call finished.';
  if (status === 'interrupted') return 'The server stopped before the call finished.';
  if (status === 'failed') return 'The reply failed before the call finished.';
  if (status === 'truncated') return 'The reply was cut at the output limit before the call was complete.';
  return 'The call never finished.';
}

/**
 * Ends every call still running, as failed with the reason: a reply that stopped, failed or was interrupted
 * leaves no call "in flight" forever.
 */
export function settleRunningTools(parts: readonly Part[], reason: string): Part[] {
  if (!parts.some((p) => p.type === 'tool' && p.state === 'running')) return parts as Part[];
  return parts.map((p) =>
    p.type === 'tool' && p.state === 'running' ? { ...p, state: 'failed', error: reason } : p,
  );
}
