import { z } from 'zod';
import { AgentChoices, Choices } from '../redaction/index.ts';
import { MessageStatus, PublicationStatus, Time } from './schemas.ts';

/** A record as it stands on the PDS (lexicon-shaped; the lexicon, not this contract, says what it holds). */
const RecordValue = z.record(z.string(), z.unknown());

/** What must be fixed before publishing, by turn (the PUBLISH_PROBLEMS error carries the same list). */
export const PublishProblem = z.object({
  messageId: z.string().nullable(),
  turn: z.number().int().nullable(),
  code: z.enum([
    'TEXT_TOO_LONG',
    'SUMMARY_TOO_LONG',
    'UNRESOLVED_REF',
    'UNRESOLVED_MENTION',
    'BAD_REF',
    'COVERED_REFERENCE',
    'TOO_MANY_STEPS',
    'INVALID_RECORD',
  ]),
  message: z.string(),
});

/** What a refused publish still covered in what was out (ADR 0090): the refusal's `details.covered`. */
export const CoveredDetails = z.object({
  records: z.number().int(),
  holes: z.array(z.number().int()),
  /** The turns (by position) the request withheld that were out: holes now too (ADR 0094). */
  held: z.array(z.number().int()).default([]),
  /** Whether the request covered words (false: it only withheld turns). */
  covering: z.boolean().default(true),
  /** Those turns by Message id: withheld in the draft now, and so on the publish page. */
  withheld: z.array(z.string()).default([]),
  written: z.boolean(),
  tooMany: z.number().int(),
});
export type CoveredDetails = z.output<typeof CoveredDetails>;

/**
 * What covering at once says to the Player, written once for the server's message and the publish page:
 * `rewritten` when records were written, `tooMany` when turns took none of their new redactions (else '').
 */
export function coveredSentences(
  c: Pick<CoveredDetails, 'records' | 'holes' | 'tooMany'> &
    Partial<Pick<CoveredDetails, 'held' | 'covering'>>,
): {
  rewritten: string;
  tooMany: string;
} {
  const holes = c.holes.length
    ? ` (${c.holes.length === 1 ? `turn ${c.holes[0]} is now a hole: it` : `turns ${listed(c.holes)} are now holes: they`} could not stay published with those words covered)`
    : '';
  const held = c.held ?? [];
  const withheld =
    held.length === 0
      ? 'The turns you just withheld are holes'
      : held.length === 1
        ? `Turn ${held[0]}, which you just withheld, is a hole`
        : `Turns ${listed(held)}, which you just withheld, are holes`;
  const records = c.records === 1 ? 'one record' : `${c.records} records`;
  const lead =
    c.covering === false
      ? `${withheld} already in what was published`
      : 'The words you just covered are covered already in what was published';
  const also = c.covering !== false && held.length ? ` ${withheld} there too.` : '';
  return {
    rewritten: `${lead}: ${records} rewritten${holes}.${also} Nothing else you asked for went out.`,
    tooMany: c.tooMany
      ? `${c.tooMany === 1 ? 'One turn' : `${c.tooMany} turns`} would pass 500 redactions: the words you selected there are not covered. Merge some selections and publish again.`
      : '',
  };
}

/** 2 · "2 and 3" · "2, 3 and 5". */
const listed = (n: readonly number[]) =>
  n.length < 2 ? n.join('') : `${n.slice(0, -1).join(', ')} and ${n.at(-1)}`;

/** POST …/publication/preview: the records as they would be written, and what stands in the way. */
export const PublishPreview = z.object({
  /** The session record's at-uri. */
  uri: z.string(),
  /** The title as it will be written (covered). */
  title: z.string(),
  /** The title made from the published text, used when the Player writes none. */
  defaultTitle: z.string(),
  /** The title the Player wrote, as kept in the draft (null: the default). */
  chosenTitle: z.string().nullable(),
  records: z.array(
    z.object({
      rkey: z.string(),
      collection: z.string(),
      messageId: z.string().nullable(),
      record: z.unknown(),
      /** The write the record still needs: create, update, delete, or null when the PDS holds it. */
      write: z.enum(['create', 'update', 'delete']).nullable(),
    }),
  ),
  problems: z.array(PublishProblem),
  /** Links and mentions of published turns not looked up yet (a preview looks up only the turns asked). */
  unchecked: z.array(z.object({ messageId: z.string(), turn: z.number().int(), links: z.array(z.string()) })),
  /** The NPCs the session names, with their own descriptions, for the Player to start from. */
  agents: z.array(
    z.object({
      npcId: z.string(),
      name: z.string(),
      jobTitle: z.string(),
      description: z.string(),
      /** Its picture in the app, when it has one that can be published (ADR 0065). */
      avatarUrl: z.string().nullable(),
    }),
  ),
  /** The PDS rate-limit points the writes cost. */
  points: z.number(),
});
/** PUT …/publication: the new state (every record as it now stands), and the PDS calls it took. */
export const PublishResult = PublishPreview.extend({ calls: z.number().int() });
/** POST …/publication/resume: the PDS calls it took. */
export const ResumeResponse = z.object({ calls: z.number().int() });

/** A Conversation's publication as its Player sees it (GET …/publication). */
export const PublicationView = z.object({
  conversationId: z.uuid(),
  did: z.string(),
  sessionRkey: z.string(),
  title: z.string(),
  status: PublicationStatus,
  error: z.string().nullable(),
  /** Live publishing (ADR 0043): new turns follow after `liveDelaySeconds`, withheld if `liveWithhold`. */
  live: z.boolean(),
  liveWithhold: z.boolean(),
  liveDelaySeconds: z.number().int(),
  /** When the next append goes out, if one is waiting. */
  liveDueAt: Time.nullable(),
  /** When a run left part-way (`failed`, or `unpublishing`) is tried again by the server itself, if it is. */
  retryDueAt: Time.nullable(),
  /** The path shown has left the one reviewed and published: nothing goes out until it is published again. */
  livePaused: z.boolean(),
  /** The session record's at-uri. */
  uri: z.string(),
  turns: z.array(
    z.object({
      messageId: z.string().nullable(),
      rkey: z.string(),
      choice: RecordValue,
      record: RecordValue,
      /** A record still to be written (the stored plan, written batch by batch). */
      pending: z.enum(['create', 'update', 'delete']).nullable(),
    }),
  ),
});
/** The Player's choices and title, kept across unpublishing. */
export const PublishDraft = z.object({
  title: z.string().nullable(),
  choices: Choices,
  agents: AgentChoices.optional(),
  /** Words still covered from turns that have since gone (regenerated replies). */
  removedWords: z.array(z.string()),
});
export const PublicationResponse = z.object({
  publication: PublicationView.nullable(),
  draft: PublishDraft.nullable(),
});

/** POST …/messages/:id/stop: how the reply ended (202 with `streaming`: still stopping). */
export const StopResponse = z.object({ status: MessageStatus });

export type PublishProblem = z.output<typeof PublishProblem>;
export type PublishPreview = z.output<typeof PublishPreview>;
export type PublicationView = z.output<typeof PublicationView>;
export type PublishDraft = z.output<typeof PublishDraft>;
export type PublicationResponse = z.output<typeof PublicationResponse>;
