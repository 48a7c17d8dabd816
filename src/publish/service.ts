import { Agent } from '@atproto/api';
import { TID } from '@atproto/common-web';
import type { NodeOAuthClient } from '@atproto/oauth-client-node';
import { indexedUris, indexRecords, removeRecord } from '../appview/index.ts';
import { restoreSession } from '../auth/index.ts';
import {
  allMessages,
  everyMessageId,
  getConversation,
  getParticipants,
  markInterrupted,
} from '../conversations/index.ts';
import type { Leases, Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { assertValidRecord, InvalidRecordError, MESSAGE, SESSION } from '../lexicon/index.ts';
import { publishOutcome } from '../metrics/index.ts';
import type { AgentChoices, Choices, Preview } from '../redaction/index.ts';
import { skillNames } from '../tools/index.ts';
import { npcAvatars } from './avatars.ts';
import { POINTS_PER_HOUR, pointsFor } from './batches.ts';
import { executePending, PublishPausedError } from './execute.ts';
import { turnEnded } from './hold.ts';
import {
  defaultTitle,
  type Problem,
  type PublishTurn,
  projectSession,
  projectTurn,
  publishedTexts,
  referencesOf,
} from './projection.ts';
import { agentRepo, type Repo } from './repo.ts';
import { networkResolver, resolveAll } from './resolve.ts';
import {
  type Draft,
  dropPublication,
  getDraft,
  getPublication,
  getPublishedRecords,
  markAllForDeletion,
  type PublishedRecord,
  savePlan,
  setStatus,
} from './store.ts';

export interface PublishDeps {
  sql: Sql;
  /** Publication leases (see withPublicationLock). */
  leases: Leases;
  oauth: () => NodeOAuthClient;
  plcUrl: () => string;
  localNetwork: boolean;
  /** The outbound fetch for resolving refs and mentions (see outbound/). */
  fetch: typeof globalThis.fetch;
  log: (message: string, error?: unknown) => void;
}

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

interface Planned {
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
/** The Player's repo through their OAuth session: the only way the server writes to a PDS. */
async function repoFor(deps: PublishDeps, did: string): Promise<{ repo: Repo; agent: Agent }> {
  const agent = new Agent(await restoreSession(deps.oauth(), did, 'publish'));
  return { repo: agentRepo(agent, did), agent };
}

async function loadTurns(sql: Sql, conversationId: string): Promise<PublishTurn[]> {
  let messages = await allMessages(sql, conversationId);
  // A reply left streaming by a server that has since died is not in progress: it is marked interrupted here
  // (as every server does at start), so it cannot block publishing while the others keep running.
  if (messages.some((m) => m.status === 'streaming')) {
    const ended = await markInterrupted(sql);
    // Ended now: a live Conversation gives the reply its hold-back window (ADR 0046).
    await turnEnded(sql, ended);
    if (ended.length) messages = await allMessages(sql, conversationId);
  }
  if (messages.some((m) => m.status === 'streaming')) {
    throw new AppError('TURN_IN_PROGRESS', 'An NPC is still answering. Publish once the reply has finished.');
  }
  return messages.map((m) => ({
    messageId: m.id,
    role: m.role,
    npcId: m.npcId,
    parts: m.parts,
    createdAt: m.createdAt,
    provider: m.provider,
    model: m.model,
  }));
}

/**
 * Every record the Conversation should have on the PDS given the Player's choices, and the write each needs
 * against what is already there: new turns are created with fresh TIDs after the last one (so TID order stays
 * reading order), changed ones updated under the same rkey, unchanged ones left alone.
 */
async function plan(
  deps: PublishDeps,
  did: string,
  agent: Agent,
  conversationId: string,
  playerId: string,
  input: PublishInput,
  lookups: 'all' | ReadonlySet<string>,
): Promise<Planned> {
  const conversation = await getConversation(deps.sql, playerId, conversationId);
  if (!conversation) throw new AppError('NOT_FOUND', 'Conversation not found.');
  const [turns, participants, existing, current, draft, skills, everyId] = await Promise.all([
    loadTurns(deps.sql, conversationId),
    getParticipants(deps.sql, conversationId),
    getPublishedRecords(deps.sql, conversationId),
    getPublication(deps.sql, conversationId),
    getDraft(deps.sql, conversationId),
    skillNames(deps.sql, playerId),
    everyMessageId(deps.sql, conversationId),
  ]);
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
  const published = publishedTexts(turns, choices, Object.values(removed).flat());
  const words = { ...removed, ...published.words };
  // Withheld turns ask for nothing (referencesOf); of the others, only those checked when previewing.
  const lookUp = (id: string) => lookups === 'all' || lookups.has(id);
  const wanted = turns
    .filter((t) => lookUp(t.messageId))
    .map((t) => referencesOf(t, choices[t.messageId] ?? {}, published));
  const resolution = await resolveAll(
    networkResolver(agent, deps.plcUrl(), deps.localNetwork, deps.fetch),
    wanted.flatMap((w) => w.pointers),
    wanted.flatMap((w) => w.accounts),
  );

  // The session keeps its rkey across unpublish and publish, so links shared before work again.
  const sessionRkey = current?.sessionRkey ?? draft?.sessionRkey ?? TID.nextStr();
  const sessionUri = `at://${did}/${SESSION}/${sessionRkey}`;
  const chosenTitle = (input.title === undefined ? draft?.title : input.title)?.trim() || null;
  const fallback = defaultTitle(turns, published);
  // The agents a reader meets: NPCs with a published turn. One whose every turn is withheld is not named.
  const speaking = new Set(turns.filter((t) => !choices[t.messageId]?.withheld).map((t) => t.npcId));
  // Kept only for NPCs of this Conversation.
  const agentChoices: AgentChoices = Object.fromEntries(
    Object.entries({ ...draft?.agents, ...input.agents }).filter(([id]) =>
      participants.some((n) => n.id === id),
    ),
  );
  const named = participants.filter((n) => speaking.has(n.id));
  const avatars = await npcAvatars(
    deps.sql,
    named.map((n) => n.id),
  );
  const agents = named.map((n) => ({
    name: n.name,
    jobTitle: n.jobTitle,
    model: null,
    choice: agentChoices[n.id],
    // Only when the Player ticked it (ADR 0065).
    avatar: agentChoices[n.id]?.avatar ? avatars.get(n.id) : undefined,
  }));
  const sessionRecord = projectSession({
    title: chosenTitle ?? fallback,
    createdAt: published.times.get(turns[0]!.messageId)!,
    agents,
    cover: published.cover,
  });
  const records: PublishedRecord[] = [
    diff(
      existing.find((r) => r.collection === SESSION),
      {
        rkey: sessionRkey,
        collection: SESSION,
        messageId: null,
        position: 0,
        choice: {},
        record: sessionRecord as never,
      },
    ),
  ];

  const problems: Problem[] = [];
  const unchecked: Planned['unchecked'] = [];
  const byMessage = new Map(existing.filter((r) => r.messageId).map((r) => [r.messageId!, r]));
  // TIDs sort as strings: new turns take TIDs after the last one published, so TID order stays reading order.
  let lastRkey = [sessionRkey, ...existing.filter((r) => r.collection === MESSAGE).map((r) => r.rkey)]
    .sort()
    .at(-1)!;
  const names = { agents: agents.map((a) => a.name), skills };
  for (const [i, turn] of turns.entries()) {
    const choice = choices[turn.messageId] ?? {};
    const projected = projectTurn(turn, i, choice, {
      sessionUri,
      resolution,
      published,
      known: names,
    });
    problems.push(...projected.problems);
    if (projected.unchecked.length)
      unchecked.push({ messageId: turn.messageId, turn: i + 1, links: projected.unchecked });
    const prior = byMessage.get(turn.messageId);
    let rkey = prior?.rkey;
    if (!rkey) {
      lastRkey = TID.nextStr(lastRkey);
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
  // Turns published before and gone here since (a regenerated reply): their records go too.
  for (const r of existing) {
    if (r.messageId && !known.has(r.messageId) && r.cid) records.push({ ...r, pending: 'delete' });
  }
  // Every record is validated against its lexicon before any byte goes to a PDS (which would not check it);
  // a turn already refused above is not reported twice.
  const refused = new Set(problems.map((p) => p.messageId));
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
  return {
    did,
    sessionRkey,
    title: sessionRecord.title,
    defaultTitle: fallback,
    // Choices for turns on other branches are kept too: a withheld or redacted turn that comes back to the
    // path (the Player switches branch) comes back withheld or redacted (ADR 0042).
    draft: {
      sessionRkey,
      title: chosenTitle,
      choices: { ...elsewhere(draft, known, everyId), ...choices },
      words,
      agents: agentChoices,
    },
    records,
    problems,
    unchecked,
    // The editor offers each NPC's own description to start from: the Player's to see, not to publish unasked.
    agents: named.map((n) => ({
      npcId: n.id,
      name: n.name,
      jobTitle: n.jobTitle,
      description: n.description,
      avatarUrl: avatars.has(n.id) ? n.avatarUrl : null,
    })),
  };
}

/** The covered words the draft keeps for turns the Conversation no longer has. */
/** The draft's choices for turns that exist on another branch of the Conversation. */
function elsewhere(draft: Draft | undefined, onPath: ReadonlySet<string>, all: readonly string[]): Choices {
  const exists = new Set(all);
  return Object.fromEntries(
    Object.entries(draft?.choices ?? {}).filter(([id]) => !onPath.has(id) && exists.has(id)),
  );
}

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
  const same = JSON.stringify(sortKeys(prior.record)) === JSON.stringify(sortKeys(next.record));
  return { ...next, cid: prior.cid, pending: same ? null : 'update' };
}

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

function toPreview(p: Planned): Preview {
  const writes = p.records.filter((r) => r.pending).map((r) => ({ action: r.pending! }));
  return {
    uri: `at://${p.did}/${SESSION}/${p.sessionRkey}`,
    title: p.title,
    defaultTitle: p.defaultTitle,
    chosenTitle: p.draft.title,
    records: p.records.map((r) => ({
      rkey: r.rkey,
      collection: r.collection,
      messageId: r.messageId,
      record: r.record,
      write: r.pending,
    })),
    problems: p.problems,
    unchecked: p.unchecked,
    agents: p.agents,
    points: pointsFor(writes),
  };
}

export async function previewPublication(
  deps: PublishDeps,
  player: { id: string; did: string },
  conversationId: string,
  input: PublishInput,
) {
  const { agent } = await repoFor(deps, player.did);
  const checked = new Set(input.check ?? []);
  return toPreview(await plan(deps, player.did, agent, conversationId, player.id, input, checked));
}

/** Publishes, appends or edits: plans, refuses on any problem, stores the plan, then writes it. */
export async function publish(
  deps: PublishDeps,
  player: { id: string; did: string },
  conversationId: string,
  input: PublishInput,
) {
  const { repo, agent } = await repoFor(deps, player.did);
  const planned = await plan(deps, player.did, agent, conversationId, player.id, input, 'all');
  const preview = toPreview(planned);
  // Every published turn's links were looked up above; one left unchecked would be published without them.
  if (planned.unchecked.length) throw new Error('publish left links unchecked');
  if (planned.problems.length) {
    throw new AppError(
      'PUBLISH_PROBLEMS',
      `${planned.problems.length === 1 ? 'One thing must' : `${planned.problems.length} things must`} be fixed before publishing: they are listed below, each with its turn.`,
      { details: { problems: planned.problems } },
    );
  }
  if (preview.points > POINTS_PER_HOUR) {
    throw new AppError(
      'RATE_LIMIT_BUDGET',
      `Publishing this needs about ${preview.points} of your PDS's ${POINTS_PER_HOUR} write points per hour. Withhold or publish part of it now and the rest later.`,
    );
  }
  await savePlan(deps.sql, {
    publication: {
      conversationId,
      playerId: player.id,
      did: player.did,
      sessionRkey: planned.sessionRkey,
      title: planned.title,
    },
    records: planned.records,
    draft: planned.draft,
  });
  const calls = await run(deps, repo, conversationId);
  // The answer is the new state: every record as it now stands on the PDS, nothing left to write.
  const records = preview.records.filter((r) => r.write !== 'delete').map((r) => ({ ...r, write: null }));
  return { ...preview, records, points: 0, calls };
}

/** Writes what the stored plan still needs; used after a pause or a crash. */
export async function resume(deps: PublishDeps, did: string, conversationId: string): Promise<number> {
  const { repo } = await repoFor(deps, did);
  return run(deps, repo, conversationId);
}

async function run(deps: PublishDeps, repo: Repo, conversationId: string): Promise<number> {
  const publication = await getPublication(deps.sql, conversationId);
  try {
    const calls = await executePending(deps.sql, repo, conversationId);
    const sessionUri = `at://${repo.did}/${SESSION}/${publication?.sessionRkey}`;
    if (publication?.status === 'unpublishing') {
      await verifyGone(repo, sessionUri);
      await dropPublication(deps.sql, conversationId);
    } else await setStatus(deps.sql, conversationId, 'published', null);
    publishOutcome(publication?.status === 'unpublishing' ? 'unpublished' : 'published');
    // Write-through to our own AppView index, so the Player's link works at once (the event stream brings
    // the same records a moment later; indexing is idempotent).
    await syncIndex(
      deps.sql,
      repo.did,
      sessionUri,
      await getPublishedRecords(deps.sql, conversationId),
    ).catch((e) => deps.log('index write-through failed', e));
    return calls;
  } catch (e) {
    const message =
      e instanceof PublishPausedError
        ? e.message
        : `Publishing stopped part-way: ${(e as Error).message}. It resumes where it stopped.`;
    publishOutcome(e instanceof PublishPausedError ? 'paused' : 'failed');
    await setStatus(
      deps.sql,
      conversationId,
      publication?.status === 'unpublishing' ? 'unpublishing' : 'failed',
      message,
    );
    throw new AppError('PUBLISH_INCOMPLETE', message, {
      status: e instanceof PublishPausedError ? 429 : 502,
      cause: e,
    });
  }
}

/** Deletes every record of the publication, then lists the repo to make sure none is left. */
export async function unpublish(
  deps: PublishDeps,
  player: { id: string; did: string },
  conversationId: string,
) {
  const publication = await getPublication(deps.sql, conversationId);
  if (!publication)
    throw new AppError('NOT_PUBLISHED', 'This Conversation is not published.', { status: 404 });
  const { repo } = await repoFor(deps, player.did);
  await markAllForDeletion(deps.sql, conversationId);
  await run(deps, repo, conversationId);
}

async function verifyGone(repo: Repo, sessionUri: string) {
  const leftovers: { collection: string; rkey: string }[] = [];
  for await (const r of repo.listRecords(MESSAGE)) {
    if ((r.value as { session?: string }).session === sessionUri)
      leftovers.push({ collection: MESSAGE, rkey: r.uri.split('/').pop()! });
  }
  const sessionRkey = sessionUri.split('/').pop()!;
  if (await repo.getRecordCid(SESSION, sessionRkey))
    leftovers.push({ collection: SESSION, rkey: sessionRkey });
  if (leftovers.length) await repo.applyWrites(leftovers.map((l) => ({ action: 'delete', ...l })));
}

async function syncIndex(sql: Sql, did: string, sessionUri: string, records: PublishedRecord[]) {
  const live = records.filter((r) => r.cid && r.pending === null);
  const keep = new Set(live.map((r) => `at://${did}/${r.collection}/${r.rkey}`));
  for (const uri of await indexedUris(sql, sessionUri)) if (!keep.has(uri)) await removeRecord(sql, uri);
  await indexRecords(
    sql,
    did,
    live.map((r) => ({ collection: r.collection, rkey: r.rkey, cid: r.cid!, record: r.record })),
    { written: true },
  );
}
