import { messageTexts } from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { type CoveredDetails, coveredSentences } from '../wire/index.ts';
import { type CoveredAtOnce, coverAtOnce } from './coverAtOnce.ts';
import { loadForPlan } from './load.ts';
import type { PublishInput } from './plan.ts';
import { getPublication, hasRecords, pendingWrites, saveCover } from './store.ts';

/** The refusals that leave the PDS as it was, and that a covering change goes out despite (ADR 0090). */
const REFUSALS = new Set([
  'PUBLISH_PROBLEMS',
  'RATE_LIMIT_BUDGET',
  'TURN_IN_PROGRESS',
  'CONVERSATION_CHANGED',
]);

/**
 * What to answer a publish refused with `refusal`. When the Conversation is published and the request covers
 * words it did not, or withholds turns that are out (ADR 0094), those words are covered and those turns made holes
 * at once in what is out (coverAtOnce.ts), the records written by `write`, and the refusal says so
 * (`details.covered`). A publication left part-way ('failed': a cover's writes
 * that did not finish, say) is finished too, as publishing again promises. Anything else: the refusal as it was.
 */
export async function coverDespite(
  sql: Sql,
  player: { id: string; did: string },
  conversationId: string,
  input: PublishInput,
  refusal: unknown,
  write: () => Promise<unknown>,
): Promise<unknown> {
  if (!(refusal instanceof AppError) || !REFUSALS.has(refusal.code)) return refusal;
  const publication = await getPublication(sql, conversationId);
  if (!publication || publication.status === 'unpublishing') return refusal;
  const covered = await coverNew(sql, player, conversationId, input);
  // Only for the Player's own request with redactions or turns withheld (the publish page's): a live append's
  // refusal retried every few seconds must not write each time (it withholds only turns with nothing out, so
  // `covered` is null for it). `covered` with no records: the turns it withholds were holes already.
  const leftOver =
    !covered?.records.length &&
    publication.status === 'failed' &&
    (hasRedactions(input) || covered !== null) &&
    (await pendingWrites(sql, conversationId)).length > 0;
  if (!covered && !leftOver) return refusal;
  const said = await sayWritten(covered, leftOver, write);
  return new AppError(refusal.code, `${refusal.message} ${said.sentence}`.trim(), {
    details: {
      ...(refusal.details as object | undefined),
      ...(covered
        ? { covered: { ...details(covered), written: said.written } satisfies CoveredDetails }
        : {}),
    },
    retryAfter: refusal.retryAfter,
    cause: refusal,
  });
}

const hasRedactions = (input: PublishInput) => Object.values(input.choices).some((c) => c.redactions?.length);

/**
 * The request's new redactions covered, and the turns it withholds made holes, in what is out, and stored with
 * their writes; null if it has neither.
 */
async function coverNew(
  sql: Sql,
  player: { id: string; did: string },
  conversationId: string,
  input: PublishInput,
): Promise<CoveredAtOnce | null> {
  const withholding = Object.entries(input.choices).flatMap(([id, c]) => (c.withheld === true ? [id] : []));
  // A live append withholds its new turns, which have nothing out: one small read, not a plan, says so.
  if (!hasRedactions(input) && !(withholding.length && (await hasRecords(sql, conversationId, withholding))))
    return null;
  const loaded = await loadForPlan(sql, player, conversationId, 'allow');
  const { draft } = loaded;
  if (!draft) return null;
  const onPath = new Set(loaded.turns.map((t) => t.messageId));
  const all = new Set(loaded.everyId);
  // Turns of the Conversation off the path that the request covers words in: their words cover too.
  const elsewhere = Object.entries(input.choices)
    .filter(([id, c]) => c.redactions?.length && !onPath.has(id) && all.has(id))
    .map(([id]) => id);
  const covered = coverAtOnce(
    { ...loaded, draft },
    input.choices,
    await messageTexts(sql, conversationId, elsewhere),
  );
  if (covered) await saveCover(sql, conversationId, covered);
  return covered;
}

/** What the refusal's details say of what was covered (`written` aside). */
const details = (covered: CoveredAtOnce): Omit<CoveredDetails, 'written'> => ({
  records: covered.records.length,
  holes: covered.holes,
  held: covered.held,
  covering: Object.keys(covered.redactions).length > 0,
  withheld: covered.withheld,
  tooMany: covered.tooMany,
});

/** Writes what is pending, and says what happened in a sentence for the Player. */
async function sayWritten(
  covered: CoveredAtOnce | null,
  leftOver: boolean,
  write: () => Promise<unknown>,
): Promise<{ sentence: string; written: boolean }> {
  const said = await writeAndSay(covered, leftOver, write);
  const tooMany = covered ? coveredSentences(details(covered)).tooMany : '';
  return { ...said, sentence: [said.sentence, tooMany].filter(Boolean).join(' ') };
}

async function writeAndSay(
  covered: CoveredAtOnce | null,
  leftOver: boolean,
  write: () => Promise<unknown>,
): Promise<{ sentence: string; written: boolean }> {
  if (!covered?.records.length && !leftOver)
    return {
      sentence: Object.keys(covered?.redactions ?? {}).length
        ? 'Your new redactions are kept; nothing already published showed those words.'
        : '',
      written: true,
    };
  const failure = await write().then(
    () => null,
    (e: unknown) => (e instanceof Error ? e.message : String(e)),
  );
  if (failure !== null)
    return {
      sentence: `What was already published could not be brought up to date: ${failure}`,
      written: false,
    };
  if (!covered?.records.length)
    return { sentence: 'What an earlier publish left unwritten is written now.', written: true };
  return {
    sentence: coveredSentences(details(covered)).rewritten,
    written: true,
  };
}
