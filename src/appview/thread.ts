import type { Sql } from '../db/index.ts';
import { HIDING, noticeLabels, turnLabels } from '../labels/index.ts';
import { SESSION } from '../lexicon/index.ts';
import { type ThreadWindow, threadWindow, turnWeight } from '../markdown/index.ts';
import { type Cover, withoutDirection } from '../redaction/index.ts';
import { handleNow, lookUpAll, QUOTE_CHARS, type RefNow, recordNow } from './lookups.ts';
import type { Network } from './network.ts';
import { cachedThread, getThread, resolveActor, type ThreadReadOptions } from './read.ts';

/** The cover of the Conversation published as a session (by its at-uri), when it was published from here. */
export type CoverOf = (sessionUri: string) => Promise<Cover | null>;

export interface ThreadView {
  uri: string;
  author: { did: string; handle: string | null };
  session: Record<string, unknown>;
  messages: {
    uri: string;
    rkey: string;
    record: Record<string, unknown>;
    /** `unchecked`: past the lookups one read may make (see lookups.ts). */
    refs: {
      uri: string;
      cid: string;
      state: 'same' | 'changed' | 'deleted' | 'unchecked';
      text: string | null;
    }[];
    mentions: { did: string; handle: string | null }[];
    /** Followed labelers' labels on this turn that do not hide it: a notice the reader clicks through. */
    labels: { src: string; val: string }[];
    /** A followed labeler hid this turn (`!hide`, `!takedown`): it is served as a hole (`record.withheld`). */
    hidden?: true;
  }[];
  /** Followed labelers' labels on the thread or its author that do not hide it (`!warn`, content labels). */
  labels: { src: string; val: string }[];
}

/** One page of a thread as the reader gets it, and what the whole thread's head quotes. */
export interface ThreadPage {
  /** The thread with this page's turns only, their refs and mentions looked up. */
  thread: ThreadView;
  window: ThreadWindow;
  /** The records of the thread's first turns with text (at most three): its card and description quote them. */
  opening: Record<string, unknown>[];
}

/** Turns with text the head of a thread quotes (the card's three lines; the description, the first). */
const OPENING = 3;

/**
 * A page of a published thread for the reader (src/markdown/pages.ts splits it): from the index (backfilled from
 * the author's repo when the index has not seen it), with each of the page's refs looked up now — "changed
 * since" when its CID moved, "deleted" when it is gone — and each mention shown as its current handle. Only the
 * page's: the lookups' bound is spent on the turns shown, and a 5,000-turn thread costs a page's work. Null when
 * there is no thread, `no-page` when it has no such page.
 */
export async function readThread(
  sql: Sql,
  network: Network,
  actor: string,
  rkey: string,
  page = 1,
  options: ThreadReadOptions & { coverOf?: CoverOf } = {},
): Promise<ThreadPage | 'no-page' | null> {
  const did = await resolveActor(sql, network, actor);
  if (!did) return null;
  const uri = `at://${did}/${SESSION}/${rkey}`;
  // The label reads go out with the thread's version check, not a round trip after it: the thread's own, and its
  // page's turns' by the turns it had when last read (asked again below only if they have changed since).
  const cached = cachedThread(uri);
  const known = cached && pageOf(cached.messages, page)?.shown.map((m) => m.uri);
  const early = known && turnLabels(sql, known);
  const notices = noticeLabels(sql, [did, uri]);
  for (const p of [early, notices]) p?.catch(() => {});
  const thread = await getThread(sql, network, uri, options);
  if (!thread) return null;
  const paged = pageOf(thread.messages, page);
  if (!paged) return 'no-page';
  const { window, shown } = paged;
  const uris = shown.map((m) => m.uri);
  const sameTurns = !!known && known.length === uris.length && known.every((u, i) => u === uris[i]);
  const records = shown.map((m) => m.record as PageRecord);
  // All at once: the lookups (each within the per-read bound) and the two label reads.
  const [[refsNow, handlesNow], turnLabelRows, labels, cover] = await Promise.all([
    lookUpPage(network, did, records, options.requester ?? 'anonymous'),
    sameTurns && early ? early : turnLabels(sql, uris),
    notices,
    // Only a page with something looked up needs it.
    records.some((r) => r.refs?.length || r.mentions?.length) ? (options.coverOf?.(uri) ?? null) : null,
  ]);
  const { coveredText, coveredHandle } = covering(cover);
  const onTurn = labelsByTurn(turnLabelRows);
  const messages = shown.map((m, i) => ({
    uri: m.uri,
    rkey: m.uri.split('/').pop()!,
    record: m.record,
    refs: (records[i]!.refs ?? []).map((ref) => {
      const now = refsNow.get(ref.uri);
      if (now === UNCHECKED || now === undefined)
        return { uri: ref.uri, cid: ref.cid, state: 'unchecked' as const, text: null };
      return {
        uri: ref.uri,
        cid: ref.cid,
        state: !now ? ('deleted' as const) : now.cid === ref.cid ? ('same' as const) : ('changed' as const),
        text: coveredText(now?.text ?? null),
      };
    }),
    mentions: (records[i]!.mentions ?? []).map((d) => ({
      did: d,
      handle: coveredHandle(handlesNow.get(d) ?? null),
    })),
    labels: onTurn.get(m.uri)?.notices ?? [],
    // Said only of a hole (a label that arrived after the thread was read hides the turn at the next read).
    ...(m.record.withheld === true && onTurn.get(m.uri)?.hides ? { hidden: true as const } : {}),
  }));
  const view: ThreadView = {
    labels: labels.map((l) => ({ src: l.src, val: l.val })),
    uri: thread.session.uri,
    author: { did, handle: thread.session.author.handle ?? handlesNow.get(did) ?? null },
    session: thread.session.record,
    messages,
  };
  return { thread: view, window, opening: openingOf(thread.messages) };
}

type PageRecord = { refs?: { uri: string; cid: string }[]; mentions?: string[] };
const UNCHECKED = Symbol('unchecked');

/**
 * Every ref and mention of a page, looked up once each, within the per-read bound and the places `reader` may
 * hold (lookups.ts).
 */
function lookUpPage(network: Network, did: string, records: PageRecord[], reader: string) {
  return Promise.all([
    lookUpAll<string, RefNow | null | typeof UNCHECKED>(
      records.flatMap((r) => (r.refs ?? []).map((ref) => ref.uri)),
      (uri, keptOnly) => recordNow(network, uri, reader, keptOnly),
      UNCHECKED,
    ),
    lookUpAll(
      [did, ...records.flatMap((r) => r.mentions ?? [])],
      (d, keptOnly) => handleNow(network, d, reader, keptOnly),
      null,
    ),
  ]);
}

/**
 * What is looked up now is never in a record: a thread published from here has its Conversation's cover applied
 * to it, a quote before it is cut (a covered word across the cut would no longer be found).
 */
function covering(cover: Cover | null) {
  return {
    coveredText: (text: string | null) =>
      text === null ? null : (cover ? cover.apply(withoutDirection(text)) : text).slice(0, QUOTE_CHARS),
    coveredHandle: (handle: string | null) => (handle && cover?.find(handle).length ? null : handle),
  };
}

/** Each turn's labels, by its URI: notices to click through, and which holes a labeler made. */
function labelsByTurn(rows: readonly { uri: string; src: string; val: string }[]) {
  const onTurn = new Map<string, { notices: { src: string; val: string }[]; hides: boolean }>();
  for (const l of rows) {
    const turn = onTurn.get(l.uri) ?? { notices: [], hides: false };
    if ((HIDING as readonly string[]).includes(l.val)) turn.hides = true;
    else turn.notices.push({ src: l.src, val: l.val });
    onTurn.set(l.uri, turn);
  }
  return onTurn;
}

// Each thread's turn weights, by its (cached, frozen) list of turns: a hot thread is weighed once per version,
// not twice on each read (the cached page's labels, then the page).
const weighed = new WeakMap<readonly unknown[], number[]>();

/** Page `page` of a thread's turns, and where it is among them; null when there is no such page. */
function pageOf<T extends { record: Record<string, unknown> }>(messages: readonly T[], page: number) {
  let weights = weighed.get(messages);
  if (!weights) {
    weights = messages.map((m) => turnWeight(m.record));
    weighed.set(messages, weights);
  }
  const window = threadWindow(weights, page);
  return window && { window, shown: messages.slice(window.first, window.end) };
}

/** The text a published turn shows: none for a withheld turn, nor a blank one. */
export function shownText(record: Record<string, unknown>): string | null {
  const r = record as { text?: unknown; withheld?: boolean };
  return !r.withheld && typeof r.text === 'string' && r.text.trim() ? r.text : null;
}

/** The records of a thread's first turns with text, as published. */
function openingOf(messages: readonly { record: Record<string, unknown> }[]): Record<string, unknown>[] {
  const opening: Record<string, unknown>[] = [];
  for (const m of messages) {
    if (shownText(m.record) !== null) opening.push(m.record);
    if (opening.length === OPENING) break;
  }
  return opening;
}
