import { MESSAGE, type MessageRecord, SESSION } from '../lexicon/index.ts';
import { flattenText } from '../parts/index.ts';
import { type Choices, type Cover, coveredWords, type Span } from '../redaction/index.ts';
import { choose, type Loaded, type PublishInput, plan, sameRecord } from './plan.ts';
import { coverStrings, MESSAGE_KEEP, type Resolution, webDidShows } from './projection.ts';
import type { Draft, PublishedRecord } from './store.ts';
import { clip } from './text.ts';

/**
 * Covering is never held up by the rest of a publish (ADR 0090). A Player who covers words in a published
 * Conversation wants them off the PDS; when the publish that carries the new redactions is refused for something
 * else (a link whose post was deleted, a turn too long, a reply still streaming, a turn that came since), the
 * new redactions alone go out, over what is already out. Each record already out is planned twice, as the last
 * publish left it and with the new redactions added, from the stored turns, with no lookup: where the two differ
 * the second is written, keeping the links and mentions the record has (looked up when it was published). A
 * turn that the new plan refuses (the bars make it too long) becomes a hole, as does a turn no longer on the path
 * whose record the cover touches (the next publish deletes it). Nothing else the request asked for goes out.
 * Pure: the loading and the writing are coverWrite.ts's.
 */
export interface CoveredAtOnce {
  /** The draft with the new redactions added to those it had (a redaction is never dropped here). */
  draft: Draft;
  /** The stored records the new redactions change, each with the write it now needs. */
  records: PublishedRecord[];
  /** The turns (by position, 1 for the first) whose records became holes. */
  holes: number[];
}

/** No lookups: a link not looked up is left out of a plan's record, and the stored record's is kept. */
const NOTHING_LOOKED_UP: Resolution = { refs: new Map(), mentions: new Map() };

/**
 * `loaded`: as for a publish, with the draft; `request`: the refused request's choices; `elsewhere`: turns it
 * names that are no longer on the path (a reply regenerated since the page was opened), whose words then cover
 * as those of turns gone do. Null when the request covers nothing the draft did not already cover.
 */
export function coverAtOnce(
  loaded: Loaded & { draft: Draft },
  request: Choices,
  elsewhere: readonly { id: string; text: string }[] = [],
): CoveredAtOnce | null {
  const { draft, turns } = loaded;
  const texts = new Map([
    ...elsewhere.map((t) => [t.id, t.text] as const),
    ...turns.map((t) => [t.messageId, flattenText(t.parts)] as const),
  ]);
  const choices: Choices = { ...draft.choices };
  let added = false;
  for (const [id, choice] of Object.entries(request)) {
    const had = choices[id]?.redactions ?? [];
    const all = union(had, choice.redactions ?? []);
    if (!texts.has(id) || all.length === had.length) continue;
    choices[id] = { ...choices[id], redactions: all };
    added = true;
  }
  if (!added) return null;
  // The words each turn's redactions cover, kept as a plan keeps them; those of turns off the path cover
  // everywhere, as those of turns gone do.
  const words: Record<string, string[]> = { ...draft.words };
  for (const [id, text] of texts) {
    const redactions = choices[id]?.redactions;
    if (redactions?.length) words[id] = coveredWords(text, redactions);
  }
  const next: Draft = { ...draft, choices, words };
  const was = planWith(loaded, draft);
  const now = planWith(loaded, next);
  const records: PublishedRecord[] = [];
  const holes: number[] = [];
  for (const r of loaded.existing) {
    if (r.pending === 'delete') continue;
    const before = was.records.get(r.rkey);
    const after = now.records.get(r.rkey);
    // The links it was published with, less any whose DID now spells a covered word.
    const links = linksOf(r.record, now.cover);
    let record: Record<string, unknown>;
    if (!before || !after || after.pending === 'delete') {
      // Off the path: its record cannot be planned again; one the cover touches is withheld until deleted.
      if (!links.dropped && sameRecord(coverStored(r.record, now.cover), r.record)) continue;
      record = holeOf(r.record);
    } else if (now.refused.has(r.messageId) && !sameRecord(before.record, after.record))
      record = r.collection === SESSION ? bareSession(after.record) : holeOf(r.record);
    else if (!sameRecord(before.record, after.record)) record = withLinks(after.record, links);
    else if (links.dropped) record = withLinks(r.record, links);
    else continue;
    if (sameRecord(record, r.record)) continue;
    if (r.collection === MESSAGE && record.withheld && !r.record.withheld) holes.push(r.position);
    const choice = after && after.pending !== 'delete' ? after.choice : r.choice;
    records.push({ ...r, record, choice, pending: r.cid ? 'update' : 'create' });
  }
  return { draft: next, records, holes };
}

/** The plan of the path with `draft`'s choices, its records by rkey, and what it refuses (by Message id). */
function planWith(loaded: Loaded, draft: Draft) {
  const onPath = new Set(loaded.turns.map((t) => t.messageId));
  const input: PublishInput = {
    choices: Object.fromEntries(Object.entries(draft.choices).filter(([id]) => onPath.has(id))),
  };
  const chosen = choose(loaded.turns, input, draft);
  const planned = plan({ ...loaded, draft }, input, chosen, NOTHING_LOOKED_UP);
  return {
    records: new Map(planned.records.map((r) => [r.rkey, r])),
    refused: new Set(planned.problems.map((p) => p.messageId)),
    cover: chosen.published.cover,
  };
}

/** Spans of both, each once, in the order first given: each selection is kept (its own words cover alone). */
function union(had: readonly Span[], more: readonly Span[]): Span[] {
  const seen = new Set(had.map((s) => `${s.start}:${s.end}`));
  const out = [...had];
  for (const s of more) {
    const key = `${s.start}:${s.end}`;
    if (!seen.has(key)) out.push(s);
    seen.add(key);
  }
  return out;
}

/**
 * A turn's stored record with `cover` applied again as the projection applies it (its step names and summaries
 * clipped after), for a record that cannot be planned again: only to tell whether the cover touches it.
 */
function coverStored(record: Record<string, unknown>, cover: Cover) {
  const out = coverStrings(record as unknown as MessageRecord, cover, MESSAGE_KEEP);
  for (const step of out.steps ?? []) {
    step.name = clip(step.name, 64);
    if (step.summary) step.summary = clip(step.summary, 250);
  }
  return out;
}

interface Links {
  refs?: unknown;
  mentions?: unknown;
  /** Some were left out: their DID spells a covered word. */
  dropped: boolean;
}

/** A stored record's refs and mentions (ids, never covered), less those whose did:web spells a covered word. */
function linksOf(stored: Record<string, unknown>, cover: Cover): Links {
  const refs = (stored.refs ?? []) as { uri: string }[];
  const mentions = (stored.mentions ?? []) as string[];
  const keptRefs = refs.filter((r) => !webDidShows(r.uri.split('/')[2], cover));
  const keptMentions = mentions.filter((did) => !webDidShows(did, cover));
  return {
    ...(keptRefs.length ? { refs: keptRefs } : {}),
    ...(keptMentions.length ? { mentions: keptMentions } : {}),
    dropped: keptRefs.length < refs.length || keptMentions.length < mentions.length,
  };
}

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

/** A session whose agents the new plan refuses: its title alone, as covered. */
function bareSession(record: Record<string, unknown>): Record<string, unknown> {
  const { $type, title, createdAt } = record;
  return { $type, title, createdAt, agents: [] };
}
