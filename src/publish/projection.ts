import { z } from 'zod';
import {
  type AgentRecord,
  MESSAGE,
  type MessageRecord,
  SESSION,
  type SessionRecord,
  type StepRecord,
} from '../lexicon/index.ts';
import { flattenText, type Part } from '../parts/index.ts';
import {
  findMentions,
  findRecordPointers,
  isDid,
  parseRecordPointer,
  pointerKey,
  type RecordPointer,
} from './references.ts';

/**
 * The one chokepoint every PDS-bound record passes through: a pure function from a stored Conversation and
 * the Player's choices to the exact records. Nothing else builds records, so private content (reasoning,
 * tool output, the words under a redaction) cannot reach a PDS by another path.
 */

/** Every covered span becomes this bar, whatever its length, so the bar does not say how long the words were. */
export const REDACTION_BAR = '█'.repeat(8);
const SUMMARY_GRAPHEMES = 250;
const TEXT_GRAPHEMES = 15_000;
const TEXT_BYTES = 60_000;

export const Span = z
  .object({ start: z.number().int().min(0), end: z.number().int().min(0) })
  .refine((s) => s.end > s.start, {
    message: 'a redaction covers at least one character',
  });
export const TurnChoice = z
  .object({
    withheld: z.boolean().optional(),
    redactions: z.array(Span).max(500).optional(),
    /** Step summaries by tool-call index; null or absent keeps the default made from the call. */
    steps: z.array(z.string().max(2000).nullable()).max(100).optional(),
    refs: z.array(z.string().max(500)).max(50).optional(),
    mentions: z.array(z.string().max(300)).max(50).optional(),
  })
  .strict();
export type TurnChoice = z.infer<typeof TurnChoice>;
export type Span = z.infer<typeof Span>;

export interface PublishTurn {
  messageId: string;
  role: 'player' | 'npc';
  parts: Part[];
  createdAt: Date;
  provider: string | null;
  model: string | null;
}

export interface Problem {
  messageId: string | null;
  turn: number | null;
  code:
    | 'TEXT_TOO_LONG'
    | 'SUMMARY_TOO_LONG'
    | 'UNRESOLVED_REF'
    | 'UNRESOLVED_MENTION'
    | 'BAD_REF'
    | 'TOO_MANY_STEPS'
    | 'INVALID_RECORD';
  message: string;
}

export interface Resolution {
  /** By pointerKey: the strongRef, or null when it could not be resolved. */
  refs: Map<string, { uri: string; cid: string } | null>;
  /** By handle (lower-case) or DID: the DID, or null when it could not be resolved. */
  mentions: Map<string, string | null>;
}

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
/** Grapheme count, skipped when the UTF-16 length already proves the string is within `limit`. */
const graphemes = (s: string, limit = 0) => (s.length <= limit ? s.length : [...segmenter.segment(s)].length);
const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

/** The turn's published text: its text Parts only (never reasoning), each covered span replaced by one bar. */
export function redactedText(parts: Part[], redactions: Span[] = []): string {
  const text = flattenText(parts);
  const spans = redactions
    .map((s) => ({ start: Math.min(s.start, text.length), end: Math.min(s.end, text.length) }))
    .filter((s) => s.end > s.start)
    .sort((a, b) => a.start - b.start);
  // Overlapping or touching spans are one covered run: one bar.
  const merged: Span[] = [];
  for (const span of spans) {
    const last = merged.at(-1);
    if (last && span.start <= last.end) last.end = Math.max(last.end, span.end);
    else merged.push({ ...span });
  }
  let out = '';
  let at = 0;
  for (const span of merged) {
    out += text.slice(at, span.start) + REDACTION_BAR;
    at = span.end;
  }
  return out + text.slice(at);
}

/** The default one-line summary of a call: what it was called with, never what came back. */
export function defaultStepSummary(part: Extract<Part, { type: 'tool' }>): string {
  const args = part.input === undefined ? '' : JSON.stringify(part.input);
  const line = `${part.name ?? 'tool'}(${args ?? ''})`.replace(/\s+/g, ' ');
  return clip(line, 200);
}

function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  let out = '';
  let n = 0;
  for (const { segment } of segmenter.segment(s)) {
    if (n++ === max - 1) return `${out}…`;
    out += segment;
  }
  return out;
}

/** What a turn asks to be resolved: record pointers and accounts found in its published text, plus added ones. */
export function referencesOf(
  turn: PublishTurn,
  choice: TurnChoice = {},
): { pointers: RecordPointer[]; accounts: string[]; bad: string[] } {
  if (choice.withheld) return { pointers: [], accounts: [], bad: [] };
  const text = redactedText(turn.parts, choice.redactions);
  const pointers = findRecordPointers(text);
  const bad: string[] = [];
  for (const raw of choice.refs ?? []) {
    const p = parseRecordPointer(raw);
    if (p) pointers.push(p);
    else bad.push(raw);
  }
  const accounts = [
    ...findMentions(text),
    ...(choice.mentions ?? []).map((m) => m.trim().replace(/^@/, '').toLowerCase()),
  ];
  const unique = new Map(pointers.map((p) => [pointerKey(p), p]));
  return { pointers: [...unique.values()], accounts: [...new Set(accounts)], bad };
}

export function projectTurn(
  turn: PublishTurn,
  index: number,
  choice: TurnChoice,
  ctx: { sessionUri: string; resolution: Resolution },
): { record: MessageRecord; problems: Problem[] } {
  const problems: Problem[] = [];
  const problem = (code: Problem['code'], message: string) =>
    problems.push({ messageId: turn.messageId, turn: index + 1, code, message });
  const record: MessageRecord = {
    $type: MESSAGE,
    session: ctx.sessionUri,
    role: turn.role === 'player' ? 'user' : 'assistant',
    createdAt: turn.createdAt.toISOString(),
  };
  if (turn.role === 'npc' && turn.provider && turn.model) record.model = `${turn.provider}/${turn.model}`;
  if (choice.withheld) {
    record.withheld = true;
    return { record, problems };
  }

  const text = redactedText(turn.parts, choice.redactions);
  if (graphemes(text, TEXT_GRAPHEMES) > TEXT_GRAPHEMES || utf8(text) > TEXT_BYTES) {
    problem(
      'TEXT_TOO_LONG',
      `Turn ${index + 1} is too long to publish (${graphemes(text).toLocaleString('en')} characters; the limit is 15,000). Redact part of it or withhold it.`,
    );
  }
  if (text) record.text = text;

  const tools = turn.parts.filter((p): p is Extract<Part, { type: 'tool' }> => p.type === 'tool');
  if (tools.length > 100)
    problem(
      'TOO_MANY_STEPS',
      `Turn ${index + 1} made ${tools.length} tool calls; at most 100 can be published.`,
    );
  const steps: StepRecord[] = tools.slice(0, 100).map((part, i) => {
    const edited = choice.steps?.[i]?.trim();
    const summary = edited || defaultStepSummary(part);
    if (graphemes(summary, SUMMARY_GRAPHEMES) > SUMMARY_GRAPHEMES) {
      problem(
        'SUMMARY_TOO_LONG',
        `The summary of step ${i + 1} in turn ${index + 1} is longer than 250 characters.`,
      );
    }
    const step: StepRecord = { name: clip(part.name ?? 'tool', 64), summary };
    if (part.state === 'failed') step.failed = true;
    return step;
  });
  if (steps.length) record.steps = steps;

  const { pointers, accounts, bad } = referencesOf(turn, choice);
  for (const raw of bad)
    problem(
      'BAD_REF',
      `“${raw}” in turn ${index + 1} is not a record link (at://… or a bsky.app post link).`,
    );
  const refs = pointers.flatMap((p) => {
    const resolved = ctx.resolution.refs.get(pointerKey(p));
    if (!resolved)
      problem('UNRESOLVED_REF', `Turn ${index + 1} refers to ${pointerKey(p)}, which could not be found.`);
    return resolved ? [{ uri: resolved.uri, cid: resolved.cid }] : [];
  });
  if (refs.length) record.refs = refs.slice(0, 50);
  const mentions = accounts.flatMap((a) => {
    const did = isDid(a) ? (ctx.resolution.mentions.get(a) ?? a) : ctx.resolution.mentions.get(a);
    if (!did)
      problem(
        'UNRESOLVED_MENTION',
        `Turn ${index + 1} mentions @${a}, which could not be resolved to an account.`,
      );
    return did ? [did] : [];
  });
  if (mentions.length) record.mentions = [...new Set(mentions)].slice(0, 50);
  return { record, problems };
}

export function projectSession(args: {
  title: string;
  createdAt: Date;
  agents: { name: string; jobTitle: string; description: string; model: string | null }[];
}): SessionRecord {
  const agents: AgentRecord[] = args.agents.slice(0, 20).map((a) => {
    const agent: AgentRecord = { name: clip(a.name, 64) };
    if (a.jobTitle) agent.role = clip(a.jobTitle, 100);
    if (a.description) agent.description = clip(a.description.replace(/\s+/g, ' ').trim(), 300);
    if (a.model) agent.model = a.model;
    return agent;
  });
  return { $type: SESSION, title: clip(args.title, 200), createdAt: args.createdAt.toISOString(), agents };
}
