import { isValidRecord, MESSAGE, SESSION } from '../lexicon/index.ts';
import { type Choices, type Cover, makeCover, REDACTION_BAR, type Span } from '../redaction/index.ts';
import { coverStored } from './covering.ts';
import { newRedactions } from './coverRedactions.ts';
import { choose, type Loaded, type PublishInput, plan, sameRecord } from './plan.ts';
import { type Resolution, referencesOf, UNTITLED, webDidShows } from './projection.ts';
import { pointerKey } from './references.ts';
import type { Draft, PublishedRecord } from './store.ts';

/**
 * Covering is never held up by the rest of a publish (ADR 0090). When a publish of a Conversation already out is
 * refused and its request adds redactions, the new redactions alone go out, over what is out. Each record out is
 * judged against the Conversation planned twice from its stored turns, with the draft as it was and with the new
 * redactions, with no lookup:
 * - where the first plan reproduces the record (it is as the last publish left it), the second is written, with
 *   the links the record was published with: exactly what a whole publish would write;
 * - where it does not (an NPC renamed since, another branch shown), nothing of the drift goes out: the stored
 *   record is covered again as it stands;
 * - a turn the new redactions make unpublishable (too long with the bars, a link showing a covered word), or one
 *   no longer on the path that they touch, becomes a hole.
 * Last, every record out is checked: none may show a covered word, or end, clipped, in part of one.
 * A turn the request withholds, out or owed, is a hole at once too (ADR 0094), drifted or not.
 * Pure: the loading and the writing are coverWrite.ts's.
 */
export interface CoveredAtOnce {
  /** By Message id: each turn's redactions with the new ones added (a redaction is never dropped here). */
  redactions: Record<string, Span[]>;
  /** By Message id, for those turns: the words their redactions cover (kept for turns that later go). */
  words: Record<string, string[]>;
  /** The stored records that change, each with the write it now needs. */
  records: PublishedRecord[];
  /** The turns on the path (by position, 1 for the first) whose records became holes. */
  holes: number[];
  /** The turns on the path (by position) the request withheld that were out (or owed): holes now too. */
  held: number[];
  /**
   * Those turns by Message id: withheld in the draft too, so the next publish (or live append) plans the hole that
   * is out, not the turn it cannot publish, until the Player releases it.
   */
  withheld: string[];
  /**
   * The turns the request withholds, with what of each hole it keeps (its time, its model): the request's choice,
   * not an earlier one the draft kept, in the hole and in the draft alike.
   */
  keeps: Record<string, Keeps>;
  /** Rows planned but never written, of turns no longer on the path: dropped, never to be written (as a plan does). */
  stale: string[];
  /** Turns whose new redactions were not added: they already hold MAX_REDACTIONS (coverRedactions.ts). */
  tooMany: number;
}

/** No lookups: a link not looked up is left out of a plan's record, and the stored record's is kept. */
const NOTHING_LOOKED_UP: Resolution = { refs: new Map(), mentions: new Map() };

type Keeps = { keepTime?: true; keepModel?: true };
/** What a choice keeps of its turn's hole: only what it says, never an earlier choice's. */
const keepsOf = (c: Choices[string] | undefined): Keeps => ({
  ...(c?.keepTime ? { keepTime: true as const } : {}),
  ...(c?.keepModel ? { keepModel: true as const } : {}),
});

/**
 * `loaded`: as for a publish, with the draft; `request`: the refused request's choices; `elsewhere`: turns it
 * names that are not on the path (a reply regenerated since the page was opened), whose words then cover as those
 * of turns gone do. Null when the request covers nothing the draft did not already cover and withholds no turn
 * with a record that the draft did not already withhold.
 */
export function coverAtOnce(
  loaded: Loaded & { draft: Draft },
  request: Choices,
  elsewhere: readonly { id: string; text: string }[] = [],
): CoveredAtOnce | null {
  const { draft } = loaded;
  const { redactions, words, tooMany } = newRedactions(loaded, request, elsewhere);
  const held = heldTurns(loaded, request);
  // Nothing new to cover or withhold: only the turns past the bound to say (tooMany), if any.
  if (!Object.keys(redactions).length && !held.size)
    return tooMany
      ? { redactions, words, records: [], holes: [], held: [], withheld: [], keeps: {}, stale: [], tooMany }
      : null;
  const keeps = Object.fromEntries([...held].map((id) => [id, keepsOf(request[id])]));
  const next = nextDraft(draft, redactions, words, keeps);
  const was = planWith(loaded, draft);
  const now = planWith(loaded, next);
  // The words covered only now: a string clipped before may end in part of one.
  const before = new Set(Object.values(was.words).flat());
  const fresh = [...new Set(Object.values(now.words).flat())].filter((w) => !before.has(w));
  const clipped = clippedGuard(fresh);
  // Needles new to the cover (not a word covered again in another case): what a stored link leads to may show.
  const had = new Set(was.cover.needles);
  const covering = now.cover.needles.some((n) => !had.has(n));
  // A title made from the turns (the Player wrote none) that the held turns move would be made from a turn the
  // Player may not have looked over (one come since, one still being written): until a publish that succeeds, the
  // session says none.
  const titleMoved = held.size > 0 && titleOf(was) !== titleOf(now);
  const isHeld = (r: PublishedRecord) =>
    r.collection === MESSAGE && r.messageId !== null && held.has(r.messageId);
  const records: PublishedRecord[] = [];
  const holes: number[] = [];
  const heldOut: number[] = [];
  const withheld: string[] = [];
  const stale: string[] = [];
  for (const r of loaded.existing) {
    if (r.pending === 'delete') continue;
    const onPath = now.records.get(r.rkey)?.pending !== 'delete' && now.records.has(r.rkey);
    if (!onPath && r.cid === null) {
      stale.push(r.rkey);
      continue;
    }
    let changed = judge(r, {
      was,
      now,
      clipped,
      onPath,
      named: r.messageId !== null && r.messageId in redactions,
      held: isHeld(r),
      covering,
    });
    if (titleMoved && r.collection === SESSION) {
      const untitled = { ...(changed ?? r.record), title: UNTITLED };
      changed = sameRecord(untitled, r.record) ? undefined : untitled;
    }
    if (!changed) continue;
    if (r.collection === MESSAGE && changed.withheld && !r.record.withheld) {
      if (isHeld(r)) {
        if (onPath) heldOut.push(r.position);
      } else if (onPath) holes.push(r.position);
      if (r.messageId && (onPath || isHeld(r))) withheld.push(r.messageId);
    }
    // A create never written (an earlier write that failed) goes as what it is now: a held turn's, as its hole.
    records.push({ ...r, record: changed, pending: r.cid ? 'update' : 'create' });
  }
  return {
    redactions,
    words,
    records: asPlanned(loaded, next, records, withheld),
    holes,
    held: heldOut,
    withheld,
    keeps,
    stale,
    tooMany,
  };
}

/** The draft with the request's new redactions and words, and the turns it withholds with what each keeps. */
function nextDraft(
  draft: Draft,
  redactions: Record<string, Span[]>,
  words: Record<string, string[]>,
  keeps: Record<string, Keeps>,
): Draft {
  const choices = { ...draft.choices };
  for (const [id, all] of Object.entries(redactions)) choices[id] = { ...choices[id], redactions: all };
  for (const [id, kept] of Object.entries(keeps)) {
    const { keepTime: _t, keepModel: _m, ...rest } = choices[id] ?? {};
    choices[id] = { ...rest, withheld: true, ...kept };
  }
  return { ...draft, choices, words: { ...draft.words, ...words } };
}

/**
 * The holes on the path as the next publish plans them, the draft withholding them from now on: each one's time is
 * that of the last turn before it the draft does not withhold (projection's `publishedTimes`), not its turn's own
 * (ADR 0096). So the publish page owes them no write, and a turn's time goes with the rest of it. Every other hole
 * on the path that differs from the plan (one after a new hole, one made before ADR 0096) is rewritten to it too.
 * Off the path there is no plan of a turn: its hole is `holeOf`'s, or stays as judged.
 */
function asPlanned(
  loaded: Loaded,
  next: Draft,
  records: PublishedRecord[],
  withheld: readonly string[],
): PublishedRecord[] {
  if (!withheld.length) return records;
  const choices = { ...next.choices };
  for (const id of withheld) choices[id] = { ...choices[id], withheld: true };
  const planned = planWith(loaded, { ...next, choices }).records;
  // The plan's hole of the same path turn; never a delete's entry (a record off the path, as it is stored).
  const holeFor = (r: PublishedRecord) => {
    const p = planned.get(r.rkey);
    const same = p?.collection === MESSAGE && p.pending !== 'delete' && p.messageId === r.messageId;
    return same && p.record.withheld ? p.record : undefined;
  };
  const out = new Map(records.map((r) => [r.rkey, r]));
  for (const r of records) {
    const hole = r.record.withheld ? holeFor(r) : undefined;
    if (hole) out.set(r.rkey, { ...r, record: hole });
  }
  for (const r of loaded.existing) {
    if (out.has(r.rkey) || r.pending === 'delete' || !r.record.withheld) continue;
    const hole = holeFor(r);
    if (hole && !sameRecord(hole, r.record))
      out.set(r.rkey, { ...r, record: hole, pending: r.cid ? 'update' : 'create' });
  }
  return [...out.values()].sort((a, b) => a.position - b.position);
}

/**
 * Turns the request withholds that the draft did not, with a record out or owed, on the path or not (a reply
 * regenerated since the page was opened): holes at once, as covered words are (ADR 0094). A turn with no record (a
 * live append's new turns) has nothing out to take back.
 */
function heldTurns(loaded: Loaded & { draft: Draft }, request: Choices): Set<string> {
  const recorded = new Set(loaded.existing.map((r) => (r.collection === MESSAGE ? r.messageId : null)));
  return new Set(
    Object.entries(request)
      .filter(([id, c]) => c.withheld === true && !loaded.draft.choices[id]?.withheld && recorded.has(id))
      .map(([id]) => id),
  );
}

type Planned = ReturnType<typeof planWith>;

/** The session's title in a plan. */
const titleOf = (p: Planned) => [...p.records.values()].find((r) => r.collection === SESSION)?.record.title;
type Guard = (record: Record<string, unknown>) => Record<string, unknown>;

/** What a stored record must become (undefined: it stays as it is). */
function judge(
  r: PublishedRecord,
  o: {
    was: Planned;
    now: Planned;
    clipped: Guard;
    onPath: boolean;
    named: boolean;
    held: boolean;
    covering: boolean;
  },
): Record<string, unknown> | undefined {
  const { was, now } = o;
  const before = was.records.get(r.rkey);
  const after = now.records.get(r.rkey);
  const id = r.messageId;
  // Which links its turn names, asked only of a record that has some (a full reading of the turn's text).
  const linked = Boolean(r.record.refs || r.record.mentions);
  const [then, later] = linked ? [was.references(id), now.references(id)] : [];
  // A linked record's text or an account's handle may show a word covered now (ADR 0108), and nothing is looked
  // up here: every stored link and mention goes, until a publish looks them up again.
  const links = linksOf(r.record, now.cover, {
    refs: !o.covering && then?.pointers === later?.pointers,
    mentions: !o.covering && then?.accounts === later?.accounts,
  });
  let record: Record<string, unknown> | undefined;
  // Withheld by the request: a hole, drifted or not (nothing of the turn stays).
  if (o.held) record = holeOf(r.record);
  else if (!o.onPath || !before || !after) {
    // Off the path: it cannot be planned again; one the new redactions name or touch is a hole until deleted.
    if (o.named || links.dropped || shows(r, now.cover, o.clipped)) record = holeOf(r.record);
  } else if (r.collection === MESSAGE && now.refused.has(id) && !was.refused.has(id))
    record = holeOf(r.record);
  else if (sameRecord(withLinks(before.record, storedLinks(r.record)), r.record)) {
    if (!sameRecord(before.record, after.record) || links.dropped) record = withLinks(after.record, links);
  } else {
    // Drifted since it was published: nothing of the drift goes out. Covered as it stands, and guarded (a plan
    // clips after covering; this record was clipped before these words were covered).
    record = o.clipped(coverStored(r.collection, withLinks(r.record, links), now.cover));
  }
  // Whatever it became, covered again: none may show a covered word.
  const out = record ?? r.record;
  const final = out.withheld ? out : coverStored(r.collection, out, now.cover);
  if (sameRecord(final, r.record)) return undefined;
  return out.withheld || fits(r.collection, final) ? final : unfit(r, final);
}

/** The plan of the path with `draft`'s choices: its records by rkey, what it refuses, its cover and words. */
function planWith(loaded: Loaded, draft: Draft) {
  const onPath = new Set(loaded.turns.map((t) => t.messageId));
  const input: PublishInput = {
    choices: Object.fromEntries(Object.entries(draft.choices).filter(([id]) => onPath.has(id))),
  };
  const chosen = choose(loaded.turns, input, draft);
  const planned = plan({ ...loaded, draft }, input, chosen, NOTHING_LOOKED_UP);
  const turns = new Map(loaded.turns.map((t) => [t.messageId, t]));
  return {
    records: new Map(planned.records.map((r) => [r.rkey, r])),
    refused: new Set(planned.problems.map((p) => p.messageId)),
    cover: chosen.published.cover,
    words: chosen.words,
    /** A path turn's links and accounts as this plan reads them from its published text and choice. */
    references: (id: string | null) => {
      const turn = id === null ? undefined : turns.get(id);
      if (!turn) return undefined;
      const found = referencesOf(turn, chosen.choices[turn.messageId] ?? {}, chosen.published);
      return { pointers: found.pointers.map(pointerKey).join(' '), accounts: found.accounts.join(' ') };
    },
  };
}

/** Whether a record shows a covered word, or ends, clipped, in part of one covered only now. */
const shows = (r: PublishedRecord, cover: Cover, clipped: Guard) =>
  !sameRecord(clipped(coverStored(r.collection, r.record, cover)), r.record);

function fits(collection: string, record: Record<string, unknown>): boolean {
  return isValidRecord(collection === SESSION ? SESSION : MESSAGE, record);
}

/** A record that cannot stay as covered: a turn becomes a hole, the session its title alone. */
function unfit(r: PublishedRecord, covered: Record<string, unknown>): Record<string, unknown> {
  if (r.collection === MESSAGE) return holeOf(r.record);
  const { $type, title, createdAt } = covered;
  return { $type, title, createdAt, agents: [] };
}

/** Characters of newly covered words past which a clipped string is barred whole instead of probed. */
const PROBE_CHARS = 512;

/**
 * The fields the projection clips (ending them in "…") were cut after covering with the words covered then: one
 * may end in part of a word covered only now ("Halvard Qu…"), which the cover no longer recognises. Each ending of
 * each new word is put back after the string's last characters; where the cover then finds one reaching past the
 * cut, the string is barred from there. Past PROBE_CHARS of new words, a clipped field is barred whole.
 */
function clippedGuard(fresh: readonly string[]): Guard {
  if (!fresh.length) return (record) => record;
  const cover = makeCover(fresh);
  const probes = fresh.reduce((n, w) => n + w.length, 0) <= PROBE_CHARS;
  // A word's spellings the cover reads (references, escapes) are longer than the word: a window that holds them.
  const window = 16 * Math.max(...fresh.map((w) => w.length)) + 64;
  const guard = (s: unknown): unknown => {
    if (typeof s !== 'string' || !s.endsWith('…')) return s;
    if (!probes) return `${REDACTION_BAR}…`;
    const head = s.slice(0, -1);
    const tail = head.slice(-window);
    let from = tail.length;
    for (const w of fresh)
      for (let k = 1; k < w.length; k++)
        for (const hit of cover.find(tail + w.slice(k)))
          if (hit.end > tail.length) from = Math.min(from, hit.start);
    return from < tail.length ? `${head.slice(0, head.length - tail.length + from)}${REDACTION_BAR}…` : s;
  };
  const fields = (o: unknown, keys: readonly string[]) => {
    if (!o || typeof o !== 'object') return;
    const r = o as Record<string, unknown>;
    for (const k of keys) if (k in r) r[k] = guard(r[k]);
  };
  return (record) => {
    const out = structuredClone(record);
    fields(out, ['title']);
    for (const agent of (out.agents ?? []) as unknown[]) fields(agent, ['name', 'role', 'description']);
    for (const step of (out.steps ?? []) as unknown[]) fields(step, ['name', 'summary']);
    return out;
  };
}

interface Links {
  refs?: unknown;
  mentions?: unknown;
  /** Some were left out: their DID spells a covered word. */
  dropped: boolean;
}

/**
 * A stored record's refs and mentions (ids, looked up when it was published, never covered), less any that now
 * show a covered word (a did:web, a record key), and all of its refs (mentions) when `same` says so: the new
 * redactions change which links (accounts) its turn names (one may have been under the words just covered, and a
 * stored link cannot be told back to the words it came from), or cover words what it leads to may show (ADR
 * 0108). A whole publish looks them up again.
 */
function linksOf(
  stored: Record<string, unknown>,
  cover: Cover,
  same: { refs: boolean; mentions: boolean },
): Links {
  const refs = (stored.refs ?? []) as { uri: string }[];
  const mentions = (stored.mentions ?? []) as string[];
  // As a publish checks a link (referencesOf): its collection and record key, and a did:web; not a did:plc,
  // whose random letters a short covered word can be found in.
  const spells = (uri: string) => {
    const [, , did, collection = '', rkey = ''] = uri.split('/');
    return cover.find(collection).length > 0 || cover.find(rkey).length > 0 || webDidShows(did, cover);
  };
  const keptRefs = same.refs ? refs.filter((r) => !spells(r.uri)) : [];
  const keptMentions = same.mentions ? mentions.filter((did) => !webDidShows(did, cover)) : [];
  return {
    ...(keptRefs.length ? { refs: keptRefs } : {}),
    ...(keptMentions.length ? { mentions: keptMentions } : {}),
    dropped: keptRefs.length < refs.length || keptMentions.length < mentions.length,
  };
}

/** A stored record's refs and mentions as they are. */
const storedLinks = (stored: Record<string, unknown>): Links => ({
  ...(stored.refs ? { refs: stored.refs } : {}),
  ...(stored.mentions ? { mentions: stored.mentions } : {}),
  dropped: false,
});

/** `record` with `links` for its refs and mentions (a plan made with no lookup has none of its own). */
function withLinks(record: Record<string, unknown>, { dropped: _, ...links }: Links) {
  const { refs: _r, mentions: _m, ...rest } = record;
  return { ...rest, ...links };
}

/** A turn as a hole, where it stood: its place and time are already public, nothing else of it stays. */
function holeOf(record: Record<string, unknown>): Record<string, unknown> {
  const { $type, session, role, createdAt } = record;
  return { $type, session, role, createdAt, withheld: true };
}
