import { type AgentRecord, type MessageRecord, SESSION, type SessionRecord } from '../lexicon/index.ts';
import { type Cover, withoutDirection } from '../redaction/index.ts';
import { clip } from './text.ts';

// The Conversation's cover applied to records: every string a reader reads, then clipped to the lexicon's
// lengths. Used by the projection as it builds records, and by covering at once on records already out.

/** Top-level fields that are structure, not words: identifiers, enums, dates. Every other string is covered. */
export const MESSAGE_KEEP = new Set(['$type', 'session', 'role', 'createdAt', 'refs', 'mentions']);
const SESSION_KEEP = new Set(['$type', 'createdAt']);

/**
 * A deep copy of `record` with the cover applied to every string outside the `keep` fields, and, when anything is
 * covered, the characters that would draw them in another order than the cover reads taken off first
 * (withoutDirection).
 */
export function coverStrings<T extends object>(record: T, cover: Cover, keep: ReadonlySet<string>): T {
  if (!cover.needles.length) return structuredClone(record);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return cover.apply(withoutDirection(v));
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return Object.fromEntries(
    Object.entries(record).map(([k, v]) => [k, keep.has(k) ? structuredClone(v) : walk(v)]),
  ) as T;
}

/** The session covered and clipped, each agent's picture (given apart: a blob is not words) put back. */
export function coverSession(
  record: SessionRecord,
  cover: Cover,
  avatars: readonly (AgentRecord['avatar'] | undefined)[],
): SessionRecord {
  const session = coverStrings(record, cover, SESSION_KEEP);
  // Clipped only after covering: a covered word cut short would no longer be recognised, and would leak.
  session.title = clip(session.title, 200);
  for (const [i, agent] of (session.agents ?? []).entries()) {
    agent.name = clip(agent.name, 64);
    if (agent.role) agent.role = clip(agent.role, 100);
    if (agent.description) agent.description = clip(agent.description, 300);
    const avatar = avatars[i];
    if (avatar) agent.avatar = avatar;
  }
  return session;
}

/**
 * A record already out covered again as the projection covers (covering at once, for a record its plan does not
 * reproduce): a turn's step names and summaries clipped after, as checkLimits clips them.
 */
export function coverStored(collection: string, record: Record<string, unknown>, cover: Cover) {
  if (collection === SESSION) {
    const session = record as unknown as SessionRecord;
    const avatars = (session.agents ?? []).map((a) => a.avatar);
    const bare = session.agents
      ? { ...session, agents: session.agents.map(({ avatar: _, ...a }) => a) }
      : session;
    return coverSession(bare, cover, avatars) as unknown as Record<string, unknown>;
  }
  const out = coverStrings(record as unknown as MessageRecord, cover, MESSAGE_KEEP);
  for (const step of out.steps ?? []) {
    step.name = clip(step.name, 64);
    if (step.summary) step.summary = clip(step.summary, 250);
  }
  return out as unknown as Record<string, unknown>;
}
