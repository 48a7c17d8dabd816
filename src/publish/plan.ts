import { TID } from '@atproto/common-web';
import { AppError } from '../http/index.ts';
import {
  assertValidRecord,
  InvalidRecordError,
  MESSAGE,
  type PublishedAvatar,
  SESSION,
} from '../lexicon/index.ts';
import {
  type AgentChoices,
  type Choices,
  coverBounds,
  MAX_COVERED_CHARS,
  MAX_REDACTIONS,
  type Preview,
  redactionCount,
} from '../redaction/index.ts';
import {
  defaultTitle,
  type Problem,
  type Published,
  type PublishTurn,
  projectSession,
  projectTurn,
  publishedTexts,
  type Resolution,
  referencesOf,
} from './projection.ts';
import type { RecordPointer } from './references.ts';
import type { Draft, PublishedRecord } from './store.ts';

// The pure core of publishing: given what was loaded (the turns, the draft, the records already on the PDS) and
// what the network said of the links, the records the Conversation should have and the write each needs. The
// loading and the lookups are service.ts's.

export interface PublishInput {
  /** The title the Player wrote; null or empty for the default, absent to keep the draft's. */
  title?: string | null;
  /** Choices by Message id; a turn not named keeps the draft's choice. */
  choices: Choices;
  /** What the session says of each NPC, by NPC id; an NPC not named keeps the draft's choice. */
  agents?: AgentChoices;
  /** Stop covering the words of redactions in turns that have since gone (regenerated replies). */
  forgetRemoved?: boolean;
  /**
   * The turns the Player reviewed, in order: when given and the Conversation's path is no longer these (a turn
   * came, another branch is shown), nothing is published — a turn nobody looked at must not go out in full.
   */
  path?: string[];
  /**
   * Preview only: the turns whose links and mentions to look up now. A lookup reaches whoever a link names (an
   * NPC's reply can name any host), so a preview looks up nothing the Player has not asked it to; publishing
   * looks up every published turn's.
   */
  check?: string[];
}

/** An NPC of the Conversation, as publishing sees it. */
export interface Participant {
  id: string;
  name: string;
  jobTitle: string;
  description: string;
  /** Its picture in the app, when it has one. */
  avatarUrl?: string | null;
}

/** What publishing loads before it plans. */
export interface Loaded {
  did: string;
  /** The turns on the path, in order. */
  turns: PublishTurn[];
  participants: Participant[];
  /** The records the plan stored last time, as the PDS holds them. */
  existing: PublishedRecord[];
  /** The session's rkey when the Conversation is published. */
  sessionRkey: string | undefined;
  draft: Draft | undefined;
  /** The Player's Skills by name (a turn naming one is not a mention). */
  skills: string[];
  /** Every Message of the Conversation, on the path or not. */
  everyId: string[];
  /** By NPC id: the published reference of each picture that can be published (ADR 0065). */
  avatars: ReadonlyMap<string, PublishedAvatar>;
}

/** The Player's choices applied to the turns: what each turn publishes, before any lookup. */
export interface Chosen {
  /** The ids of the turns on the path. */
  known: Set<string>;
  /** By Message id: the request's choice, else the draft's. */
  choices: Choices;
  published: Published;
  /** By Message id: the words covered, of the turns here and of those gone that still cover. */
  words: Record<string, string[]>;
}

export interface Planned {
  did: string;
  sessionRkey: string;
  title: string;
  defaultTitle: string;
  draft: Draft;
  records: PublishedRecord[];
  problems: Problem[];
  unchecked: Preview['unchecked'];
  agents: Preview['agents'];
}

/** Makes a TID after `after` (or now): the clock's, or a test's. */
export type NextTid = (after?: string) => string;

/**
 * Checks the request against the turns (refused when there are none, when the path changed since the Player
 * reviewed it, or when it names a turn that is not there) and applies its choices over the draft's.
 */
export function choose(turns: readonly PublishTurn[], input: PublishInput, draft: Draft | undefined): Chosen {
  if (turns.length === 0) throw new AppError('NOTHING_TO_PUBLISH', 'This Conversation has no turns yet.');
  if (
    input.path &&
    (input.path.length !== turns.length || turns.some((t, i) => t.messageId !== input.path![i]))
  )
    throw new AppError(
      'CONVERSATION_CHANGED',
      'The Conversation changed since this page was opened (a new turn, or another branch shown). Look over its turns again, then publish.',
    );
  const known = new Set(turns.map((t) => t.messageId));
  const stray = Object.keys(input.choices).find((id) => !known.has(id));
  if (stray) throw new AppError('INVALID_BODY', `There is no turn ${stray} in this Conversation.`);

  // The draft's choices (kept across unpublishing) for the turns the request does not name.
  const choices: Choices = {};
  for (const t of turns) {
    const choice = input.choices[t.messageId] ?? draft?.choices[t.messageId];
    if (choice) choices[t.messageId] = choice;
  }
  // Words the Player covered in turns that have since gone still cover, until the Player lets them go.
  const removed = input.forgetRemoved ? {} : removedWords(draft, known);
  const gone = Object.values(removed).flat();
  const published = publishedTexts(turns, choices, gone, (words) =>
    withinCover(redactionCount(choices) + gone.length, words),
  );
  return { known, choices, published, words: { ...removed, ...published.words } };
}

/**
 * Refuses a cover past its bounds before it is made (it costs the covered words' length, for every publish,
 * preview and live turn): MAX_REDACTIONS selections, the words still covered from turns gone counted too, and
 * MAX_COVERED_CHARS characters of distinct covered words (overlapping selections each count).
 */
function withinCover(count: number, words: readonly string[]): void {
  const { chars, within } = coverBounds(count, words);
  if (!within)
    throw new AppError(
      'TOO_MANY_REDACTIONS',
      `A Conversation covers at most ${MAX_REDACTIONS.toLocaleString('en')} selections of ${MAX_COVERED_CHARS.toLocaleString('en')} characters in all, and this one would cover ${count.toLocaleString('en')} of ${chars.toLocaleString('en')}. Merge selections that touch, withhold turns instead of covering them whole or word by word, or let go of the words of turns that have gone.`,
      { details: { count, chars, max: MAX_REDACTIONS, maxChars: MAX_COVERED_CHARS } },
    );
}

/**
 * The links and mentions to look up: withheld turns ask for nothing (referencesOf); of the others, every one
 * when publishing, only those checked when previewing.
 */
export function lookupsOf(
  turns: readonly PublishTurn[],
  chosen: Chosen,
  lookups: 'all' | ReadonlySet<string>,
): { pointers: RecordPointer[]; accounts: string[] } {
  const wanted = turns
    .filter((t) => lookups === 'all' || lookups.has(t.messageId))
    .map((t) => referencesOf(t, chosen.choices[t.messageId] ?? {}, chosen.published));
  return { pointers: wanted.flatMap((w) => w.pointers), accounts: wanted.flatMap((w) => w.accounts) };
}

/**
 * Every record the Conversation should have on the PDS given the Player's choices, and the write each needs
 * against what is already there: new turns are created with fresh TIDs after the last one (so TID order stays
 * reading order), changed ones updated under the same rkey, unchanged ones left alone.
 */
export function plan(
  loaded: Loaded,
  input: PublishInput,
  chosen: Chosen,
  resolution: Resolution,
  nextTid: NextTid = (after) => TID.nextStr(after),
): Planned {
  const { did, draft, existing } = loaded;
  // The session keeps its rkey across unpublish and publish, so links shared before work again.
  const sessionRkey = loaded.sessionRkey ?? draft?.sessionRkey ?? nextTid();
  const session = planSession(loaded, input, chosen, sessionRkey);
  const turnsPlanned = planTurns(loaded, chosen, resolution, session, nextTid);
  const records = [session.record, ...turnsPlanned.records];
  // Turns published before and gone here since (a regenerated reply): their records go too.
  for (const r of existing) {
    if (r.messageId && !chosen.known.has(r.messageId) && r.cid) records.push({ ...r, pending: 'delete' });
  }
  const problems = [...turnsPlanned.problems, ...invalidRecords(records, turnsPlanned.problems)];
  return {
    did,
    sessionRkey,
    title: session.title,
    defaultTitle: session.defaultTitle,
    // Choices for turns on other branches are kept too: a withheld or redacted turn that comes back to the
    // path (the Player switches branch) comes back withheld or redacted (ADR 0042).
    draft: {
      sessionRkey,
      title: session.chosenTitle,
      choices: { ...elsewhere(draft, chosen.known, loaded.everyId), ...chosen.choices },
      words: chosen.words,
      agents: session.agentChoices,
    },
    records,
    problems,
    unchecked: turnsPlanned.unchecked,
    // The editor offers each NPC's own description to start from: the Player's to see, not to publish unasked.
    agents: session.named.map((n) => ({
      npcId: n.id,
      name: n.name,
      jobTitle: n.jobTitle,
      description: n.description,
      avatarUrl: loaded.avatars.has(n.id) ? (n.avatarUrl ?? null) : null,
    })),
  };
}

/** The session record: its title, and the agents a reader meets (NPCs with a published turn). */
function planSession(loaded: Loaded, input: PublishInput, chosen: Chosen, sessionRkey: string) {
  const { turns, draft, participants } = loaded;
  const chosenTitle = (input.title === undefined ? draft?.title : input.title)?.trim() || null;
  const fallback = defaultTitle(turns, chosen.published);
  // An NPC whose every turn is withheld is not named.
  const speaking = new Set(turns.filter((t) => !chosen.choices[t.messageId]?.withheld).map((t) => t.npcId));
  // Kept only for NPCs of this Conversation.
  const agentChoices: AgentChoices = Object.fromEntries(
    Object.entries({ ...draft?.agents, ...input.agents }).filter(([id]) =>
      participants.some((n) => n.id === id),
    ),
  );
  const named = participants.filter((n) => speaking.has(n.id));
  const agents = named.map((n) => ({
    name: n.name,
    jobTitle: n.jobTitle,
    model: null,
    choice: agentChoices[n.id],
    // Only when the Player ticked it (ADR 0065).
    avatar: agentChoices[n.id]?.avatar ? loaded.avatars.get(n.id) : undefined,
  }));
  const sessionRecord = projectSession({
    title: chosenTitle ?? fallback,
    createdAt: chosen.published.times.get(turns[0]!.messageId)!,
    agents,
    cover: chosen.published.cover,
  });
  const record = diff(
    loaded.existing.find((r) => r.collection === SESSION),
    {
      rkey: sessionRkey,
      collection: SESSION,
      messageId: null,
      position: 0,
      choice: {},
      record: sessionRecord as never,
    },
  );
  return {
    uri: `at://${loaded.did}/${SESSION}/${sessionRkey}`,
    rkey: sessionRkey,
    title: sessionRecord.title,
    defaultTitle: fallback,
    chosenTitle,
    agentChoices,
    agentNames: agents.map((a) => a.name),
    named,
    record,
  };
}

/** Each turn's record, with the problems that refuse it and the links not looked up yet. */
function planTurns(
  loaded: Loaded,
  chosen: Chosen,
  resolution: Resolution,
  session: { uri: string; rkey: string; agentNames: string[] },
  nextTid: NextTid,
) {
  const { turns, existing } = loaded;
  const records: PublishedRecord[] = [];
  const problems: Problem[] = [];
  const unchecked: Planned['unchecked'] = [];
  const byMessage = new Map(existing.filter((r) => r.messageId).map((r) => [r.messageId!, r]));
  // TIDs sort as strings: new turns take TIDs after the last one published, so TID order stays reading order.
  let lastRkey = [session.rkey, ...existing.filter((r) => r.collection === MESSAGE).map((r) => r.rkey)]
    .sort()
    .at(-1)!;
  const known = { agents: session.agentNames, skills: loaded.skills };
  for (const [i, turn] of turns.entries()) {
    const choice = chosen.choices[turn.messageId] ?? {};
    const projected = projectTurn(turn, i, choice, {
      sessionUri: session.uri,
      resolution,
      published: chosen.published,
      known,
    });
    problems.push(...projected.problems);
    if (projected.unchecked.length)
      unchecked.push({ messageId: turn.messageId, turn: i + 1, links: projected.unchecked });
    const prior = byMessage.get(turn.messageId);
    let rkey = prior?.rkey;
    if (!rkey) {
      lastRkey = nextTid(lastRkey);
      rkey = lastRkey;
    }
    records.push(
      diff(prior, {
        rkey,
        collection: MESSAGE,
        messageId: turn.messageId,
        position: i + 1,
        choice,
        record: projected.record as never,
      }),
    );
  }
  return { records, problems, unchecked };
}

/**
 * Every record is validated against its lexicon before any byte goes to a PDS (which would not check it); a
 * turn already refused is not reported twice.
 */
function invalidRecords(records: readonly PublishedRecord[], already: readonly Problem[]): Problem[] {
  const refused = new Set(already.map((p) => p.messageId));
  const problems: Problem[] = [];
  for (const r of records) {
    if (r.pending === 'delete' || refused.has(r.messageId)) continue;
    try {
      assertValidRecord(r.collection as typeof MESSAGE, r.record);
    } catch (e) {
      if (!(e instanceof InvalidRecordError)) throw e;
      problems.push({
        messageId: r.messageId,
        turn: r.position || null,
        code: 'INVALID_RECORD',
        message: `A record failed its lexicon: ${e.message}`,
      });
    }
  }
  return problems;
}

/** The draft's choices for turns that exist on another branch of the Conversation. */
function elsewhere(draft: Draft | undefined, onPath: ReadonlySet<string>, all: readonly string[]): Choices {
  const exists = new Set(all);
  return Object.fromEntries(
    Object.entries(draft?.choices ?? {}).filter(([id]) => !onPath.has(id) && exists.has(id)),
  );
}

/** The covered words the draft keeps for turns the Conversation no longer has. */
export function removedWords(
  draft: Draft | undefined,
  current: ReadonlySet<string>,
): Record<string, string[]> {
  return Object.fromEntries(Object.entries(draft?.words ?? {}).filter(([id]) => !current.has(id)));
}

function diff(
  prior: PublishedRecord | undefined,
  next: Omit<PublishedRecord, 'cid' | 'pending'>,
): PublishedRecord {
  if (!prior || prior.cid === null) return { ...next, cid: null, pending: 'create' };
  // The stored record is what was planned, not what the PDS holds, until its write is done: a plan that left it
  // pending (a write that failed, a cover not yet written, a delete an unpublish did not finish: such a record is
  // still on the PDS, as it was before) still owes the PDS that record.
  const owed = prior.pending !== null;
  return {
    ...next,
    cid: prior.cid,
    pending: owed || !sameRecord(prior.record, next.record) ? 'update' : null,
  };
}

/** Two records alike whatever their keys' order (PostgreSQL's jsonb keeps its own). */
export const sameRecord = (a: unknown, b: unknown) =>
  JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, x]) => [k, sortKeys(x)]),
    );
  return v;
}
