import { isValidDid, isValidHandle } from '@atproto/syntax';
import {
  type AgentRecord,
  avatarJson,
  MESSAGE,
  type MessageRecord,
  type PublishedAvatar,
  SESSION,
  type SessionRecord,
} from '../lexicon/index.ts';
import { flattenText, type Part, stripMarkdown } from '../parts/index.ts';
import {
  type AgentChoice,
  type Choices,
  type Cover,
  coveredWords,
  makeCover,
  type Problem,
  type TurnChoice,
} from '../redaction/index.ts';
import { coverSession, coverStrings, MESSAGE_KEEP } from './covering.ts';
import { checkLimits, type Report } from './limits.ts';
import {
  findMentions,
  findRecordPointers,
  isDid,
  parseRecordPointer,
  pointerKey,
  type RecordPointer,
} from './references.ts';
import { stepsOf } from './steps.ts';
import { clip, oneLine } from './text.ts';

/**
 * The one chokepoint every PDS-bound record passes through: a pure function from a stored Conversation and
 * the Player's choices to the exact records. Nothing else builds records, so private content (reasoning,
 * tool arguments and output, withheld turns, the words under a redaction) cannot reach a PDS by another path.
 *
 * Every free-text string of every record passes through the Conversation's cover last (coverStrings): a word
 * the Player covered in one turn is covered in every turn, the title, step names and summaries, and agents.
 */

const TITLE_CHARS = 80;

export interface PublishTurn {
  messageId: string;
  role: 'player' | 'npc';
  /** The NPC that wrote it (null for the Player's turns). */
  npcId: string | null;
  parts: Part[];
  createdAt: Date;
  provider: string | null;
  model: string | null;
}

export type { Problem };

/**
 * An NPC as the session names it: its name and Job Title, and what the Player chose to say of it. Its own
 * description is not here at all (an imported card's is its whole character definition): only the Player's words.
 */
export interface PublishAgent {
  name: string;
  jobTitle: string;
  model: string | null;
  choice?: AgentChoice;
  /** The NPC's picture as an uploaded blob, when the Player chose to publish it (ADR 0065). */
  avatar?: PublishedAvatar;
}

/**
 * What was looked up on the network. A key that is absent was not looked up (the Player has not asked the
 * preview to check that turn's links): the turn is "not checked yet", not refused.
 */
export interface Resolution {
  /**
   * By pointerKey: the strongRef, or null when it could not be resolved; with the strings a reader of the link is
   * shown of its record (null: too many to check), when they were read.
   */
  refs: Map<string, { uri: string; cid: string; shown?: string[] | null } | null>;
  /** By handle (lower-case) or DID: the DID, or null when it could not be resolved. */
  mentions: Map<string, string | null>;
  /** By DID: the handle its document claims, which a reader may show for it (null: none). */
  handles?: Map<string, string | null>;
}

/** What is published of a Conversation before any record is built: the cover and each turn's covered text. */
export interface Published {
  cover: Cover;
  /** By Message id: the turn's text as published (text Parts only, covered); absent for withheld turns. */
  texts: Map<string, string>;
  /** By Message id: the words each turn's redactions cover (kept in the draft for turns that later go). */
  words: Record<string, string[]>;
  /** By Message id: the time each turn's record says (a hole's is coarse unless the Player keeps it). */
  times: Map<string, Date>;
}

/**
 * `more`: words covered besides the turns' own redactions (those of turns that have since gone). `limit` is shown
 * every covered word before a cover is made of them, and may refuse them (a cover costs their length).
 */
export function publishedTexts(
  turns: readonly PublishTurn[],
  choices: Choices,
  more: readonly string[] = [],
  limit?: (words: readonly string[]) => void,
): Published {
  const flat = turns.map((t) => ({ id: t.messageId, text: flattenText(t.parts) }));
  const words: Record<string, string[]> = {};
  for (const { id, text } of flat) {
    const redactions = choices[id]?.redactions;
    if (redactions?.length) words[id] = coveredWords(text, redactions);
  }
  const all = [...Object.values(words).flat(), ...more];
  limit?.(all);
  const cover = makeCover(all);
  const texts = new Map<string, string>();
  for (const { id, text } of flat) {
    const choice = choices[id];
    if (choice?.withheld) continue;
    const shown = cover.apply(text, choice?.redactions ?? []);
    // The Player's description of what was attached: its own words go through the same cover.
    const note = choice?.attachmentNote?.trim();
    texts.set(
      id,
      note ? [shown, `[Attached: ${cover.apply(note, [])}]`].filter(Boolean).join('\n\n') : shown,
    );
  }
  return { cover, texts, words, times: publishedTimes(turns, choices) };
}

/**
 * When each turn's record says it happened. A published turn: exactly. A hole (withheld turn) whose Player did
 * not keep its time: the last time already published before it, else the start of its day in UTC — the reading
 * order (TIDs) already says it came after that turn, so the hole says nothing more, and times never go backwards.
 */
export function publishedTimes(turns: readonly PublishTurn[], choices: Choices): Map<string, Date> {
  const times = new Map<string, Date>();
  let last: Date | undefined;
  for (const t of turns) {
    const choice = choices[t.messageId];
    if (!choice?.withheld || choice.keepTime) last = t.createdAt;
    times.set(t.messageId, last ?? startOfUtcDay(t.createdAt));
  }
  return times;
}

const startOfUtcDay = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));

/** The title of a thread with no published words to make one from. */
export const UNTITLED = 'Untitled conversation';

/**
 * The title when the Player has not written one: the first published words without their Markdown marks (a
 * title is plain text: readers saw `*map*` and `**old library**` literally), cut at a word boundary. Made from
 * published text only, so a withheld turn's words and covered words cannot reach it.
 */
export function defaultTitle(turns: readonly PublishTurn[], published: Published): string {
  for (const t of turns) {
    const text = oneLine(stripMarkdown(published.texts.get(t.messageId) ?? ''));
    if (!text) continue;
    if (text.length <= TITLE_CHARS) return text;
    const cut = text.slice(0, TITLE_CHARS + 1);
    const space = cut.lastIndexOf(' ');
    return `${(space > TITLE_CHARS / 2 ? cut.slice(0, space) : clip(text, TITLE_CHARS - 1)).replace(/[\s,;:.-]+$/, '')}…`;
  }
  return UNTITLED;
}

const decoded = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};
const isActor = (a: string) => isValidHandle(a) || isValidDid(a);

/**
 * What a turn asks to be resolved: record pointers and accounts found in its published text, plus added ones.
 * A pointer or account that shows a covered word — as written or percent-decoded, as a lookup would send it —
 * is refused and never looked up; one that is not a handle or DID is refused too. A lookup sends its words to
 * the network.
 */
export function referencesOf(
  turn: PublishTurn,
  choice: TurnChoice,
  published: Published,
): { pointers: RecordPointer[]; accounts: string[]; bad: string[]; covered: string[] } {
  const text = published.texts.get(turn.messageId);
  const out = {
    pointers: [] as RecordPointer[],
    accounts: [] as string[],
    bad: [] as string[],
    covered: [] as string[],
  };
  if (choice.withheld || text === undefined) return out;
  const shows = (...strings: string[]) =>
    strings.some((s) => published.cover.find(s).length > 0 || published.cover.find(decoded(s)).length > 0);

  const pointers = new Map<string, RecordPointer>();
  const addPointer = (p: RecordPointer, raw = pointerKey(p)) => {
    if (shows(raw, p.actor, p.collection, p.rkey)) out.covered.push(raw);
    else if (!isActor(p.actor)) out.bad.push(raw);
    else pointers.set(pointerKey(p), p);
  };
  for (const p of findRecordPointers(text)) addPointer(p);
  for (const raw of choice.refs ?? []) {
    const p = shows(raw) ? undefined : parseRecordPointer(raw);
    if (p) addPointer(p, raw);
    else (shows(raw) ? out.covered : out.bad).push(raw);
  }

  const accounts = new Set<string>();
  const added = (choice.mentions ?? []).map((m) => m.trim().replace(/^@/, '').toLowerCase()).filter(Boolean);
  for (const a of [...findMentions(text), ...added]) {
    if (shows(a)) out.covered.push(`@${a}`);
    else if (!isActor(a)) out.bad.push(`@${a}`);
    else accounts.add(a);
  }
  out.pointers = [...pointers.values()];
  out.accounts = [...accounts];
  return out;
}

export function projectTurn(
  turn: PublishTurn,
  index: number,
  choice: TurnChoice,
  ctx: {
    sessionUri: string;
    resolution: Resolution;
    published: Published;
    /** Names a default step summary may use: the session's agents and the Player's Skills. */
    known: { agents: readonly string[]; skills: readonly string[] };
  },
): { record: MessageRecord; problems: Problem[]; unchecked: string[] } {
  const problems: Problem[] = [];
  // Links and mentions not looked up yet: left out of the record (and not refused) until they are.
  const unchecked: string[] = [];
  const problem = (code: Problem['code'], message: string) =>
    problems.push({ messageId: turn.messageId, turn: index + 1, code, message });
  const record: MessageRecord = {
    $type: MESSAGE,
    session: ctx.sessionUri,
    role: turn.role === 'player' ? 'user' : 'assistant',
    createdAt: (ctx.published.times.get(turn.messageId) ?? startOfUtcDay(turn.createdAt)).toISOString(),
  };
  // A hole names no model unless the Player keeps it: which model wrote a withheld reply is the Player's to say.
  if (turn.role === 'npc' && turn.provider && turn.model && (!choice.withheld || choice.keepModel))
    record.model = `${turn.provider}/${turn.model}`;
  if (choice.withheld) {
    record.withheld = true;
    return { record: coverStrings(record, ctx.published.cover, MESSAGE_KEEP), problems, unchecked };
  }

  const text = ctx.published.texts.get(turn.messageId) ?? '';
  if (text) record.text = text;

  const steps = stepsOf(turn.parts, index, choice, ctx.known, problem);
  if (steps.length) record.steps = steps;
  const { refs, mentions } = linksOf(turn, index, choice, ctx, problem, unchecked);
  if (refs.length) record.refs = refs.slice(0, 50);
  if (mentions.length) record.mentions = [...new Set(mentions)].slice(0, 50);

  const out = coverStrings(record, ctx.published.cover, MESSAGE_KEEP);
  checkLimits(out, index, choice, problem);
  return { record: out, problems, unchecked };
}

/** A name can resolve to a did:web spelling a covered word (did:web:zephyr.example), and the DID is what goes out. */
export const webDidShows = (did: string | undefined, cover: Cover) =>
  Boolean(did?.startsWith('did:web:') && cover.find(did.slice(8)).length > 0);

/**
 * The turn's record links and mentions as looked up: one not looked up yet goes to `unchecked`, one that is bad,
 * covered or could not be resolved is a problem.
 */
function linksOf(
  turn: PublishTurn,
  index: number,
  choice: TurnChoice,
  ctx: { resolution: Resolution; published: Published },
  problem: Report,
  unchecked: string[],
): { refs: { uri: string; cid: string }[]; mentions: string[] } {
  const { pointers, accounts, bad, covered } = referencesOf(turn, choice, ctx.published);
  for (const raw of bad)
    problem(
      'BAD_REF',
      raw.startsWith('@')
        ? `“${raw}” in turn ${index + 1} is not a handle or a DID.`
        : `“${raw}” in turn ${index + 1} is not a record link (at://… or a bsky.app post link).`,
    );
  for (const raw of covered)
    problem(
      'COVERED_REFERENCE',
      `“${raw}” in turn ${index + 1} shows words you covered. Remove it, or remove the redaction.`,
    );
  const { cover } = ctx.published;
  // The DID itself (a did:web), or the handle its document claims: what a reader of the record is shown for it.
  const spells = (did: string | undefined) => {
    const handle = did ? ctx.resolution.handles?.get(did) : undefined;
    return webDidShows(did, cover) || Boolean(handle && cover.find(handle).length);
  };
  const spelled = (raw: string) =>
    problem(
      'COVERED_REFERENCE',
      `“${raw}” in turn ${index + 1} leads to an account whose address shows words you covered. Remove it, or remove the redaction.`,
    );
  // A linked record is shown by other AppViews as it is (a quoted post's text): words covered here would show there.
  const shows = (shown: string[] | null | undefined) =>
    cover.needles.length > 0 && (shown === null || Boolean(shown?.some((s) => cover.find(s).length)));
  const refs = pointers.flatMap((p) => {
    if (!ctx.resolution.refs.has(pointerKey(p))) {
      unchecked.push(pointerKey(p));
      return [];
    }
    const resolved = ctx.resolution.refs.get(pointerKey(p));
    if (!resolved)
      problem('UNRESOLVED_REF', `Turn ${index + 1} refers to ${pointerKey(p)}, which could not be found.`);
    else if (spells(resolved.uri.split('/')[2])) spelled(pointerKey(p));
    else if (shows(resolved.shown))
      problem(
        'COVERED_REFERENCE',
        resolved.shown === null
          ? `“${pointerKey(p)}” in turn ${index + 1} leads to a record too large to check for words you covered. Remove it, or remove the redaction.`
          : `“${pointerKey(p)}” in turn ${index + 1} leads to a record that shows words you covered. Remove it, or remove the redaction.`,
      );
    else return [{ uri: resolved.uri, cid: resolved.cid }];
    return [];
  });
  const mentions = accounts.flatMap((a) => {
    if (!ctx.resolution.mentions.has(a)) {
      unchecked.push(isDid(a) ? a : `@${a}`);
      return [];
    }
    // A DID whose document cannot be read is not published either: what it leads to could not be checked.
    const did = ctx.resolution.mentions.get(a);
    if (!did)
      problem(
        'UNRESOLVED_MENTION',
        `Turn ${index + 1} mentions @${a}, which could not be resolved to an account.`,
      );
    else if (spells(did)) spelled(`@${a}`);
    else return [did];
    return [];
  });
  return { refs, mentions };
}

export function projectSession(args: {
  title: string;
  createdAt: Date;
  agents: readonly PublishAgent[];
  cover: Cover;
}): SessionRecord {
  const agents: AgentRecord[] = args.agents.slice(0, 20).map((a) => {
    const agent: AgentRecord = { name: a.name };
    if (a.jobTitle) agent.role = a.jobTitle;
    // Only what the Player wrote: by default an agent is its name and Job Title.
    const description = oneLine(a.choice?.description ?? '');
    if (description) agent.description = description;
    if (a.model) agent.model = a.model;
    return agent;
  });
  const record: SessionRecord = {
    $type: SESSION,
    title: args.title,
    createdAt: args.createdAt.toISOString(),
    agents,
  };
  // Its JSON form, as the record is sent and kept (validation reads it back as a BlobRef: lexicon/index.ts).
  const avatars = args.agents
    .slice(0, 20)
    .map((a) => (a.avatar ? (avatarJson(a.avatar) as unknown as AgentRecord['avatar']) : undefined));
  return coverSession(record, args.cover, avatars);
}
