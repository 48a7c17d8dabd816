import { z } from 'zod';

// The reader's answers carry lexicon records (src/lexicon): loose objects, so every field the lexicon defines
// passes through, with the fields the pages read named.

const Label = z.object({ src: z.string(), val: z.string() });

/** A click.aligned.chat.session record. */
export const SessionRecord = z.looseObject({
  title: z.string(),
  createdAt: z.string(),
  agents: z
    .array(
      z.looseObject({
        name: z.string(),
        role: z.string().optional(),
        description: z.string().optional(),
        model: z.string().optional(),
        /** A blob in the author's repo (ADR 0065), as the record says it: checked where it is shown (avatarSrc). */
        avatar: z.unknown().optional(),
      }),
    )
    .optional(),
});
/** A click.aligned.chat.message record. */
export const MessageRecord = z.looseObject({
  role: z.string(),
  createdAt: z.string(),
  text: z.string().optional(),
  withheld: z.boolean().optional(),
  model: z.string().optional(),
  steps: z
    .array(
      z.looseObject({ name: z.string(), summary: z.string().optional(), failed: z.boolean().optional() }),
    )
    .optional(),
  refs: z.array(z.looseObject({ uri: z.string() })).optional(),
  mentions: z.array(z.string()).optional(),
});

/** GET /api/reader/threads/:actor/:rkey: a published thread, each ref and mention looked up now. */
export const ThreadView = z.object({
  uri: z.string(),
  author: z.object({ did: z.string(), handle: z.string().nullable() }),
  session: SessionRecord,
  messages: z.array(
    z.object({
      uri: z.string(),
      rkey: z.string(),
      record: MessageRecord,
      /** `unchecked`: past the lookups one read may make. */
      refs: z.array(
        z.object({
          uri: z.string(),
          cid: z.string(),
          state: z.enum(['same', 'changed', 'deleted', 'unchecked']),
          text: z.string().nullable(),
        }),
      ),
      mentions: z.array(z.object({ did: z.string(), handle: z.string().nullable() })),
      /** Followed labelers' labels on this turn that do not hide it: a notice the reader clicks through. */
      labels: z.array(Label),
      /** A followed labeler hid this turn: it is served as a hole (`record.withheld`). */
      hidden: z.literal(true).optional(),
    }),
  ),
  /** Followed labelers' labels on the thread or its author that do not hide it. */
  labels: z.array(Label),
});
/**
 * `?page=N`, asking for one page of a thread (a reading page, and the reader's API that keeps it up to date): a
 * whole number from 1, as written; any other value is no page.
 */
export const ThreadPageQuery = z.looseObject({
  page: z
    .string()
    .regex(/^[1-9][0-9]{0,5}$/)
    .transform(Number)
    .optional(),
});

/** Which page of a thread an answer holds (src/markdown/pages.ts): `first` and `end` index its turns. */
export const ThreadWindow = z.object({
  page: z.number().int(),
  pages: z.number().int(),
  first: z.number().int(),
  end: z.number().int(),
  total: z.number().int(),
});
/** One page of a thread (the first unless `?page=N`), and where it is among the thread's pages. */
export const ThreadResponse = z.object({ thread: ThreadView, window: ThreadWindow });

/** One session of click.aligned.chat.listSessions (XRPC: the lexicon validates the answer too). */
export const SessionItem = z.object({
  uri: z.string(),
  cid: z.string(),
  author: z.object({ did: z.string(), handle: z.string().optional() }),
  record: SessionRecord.partial(),
  turns: z.number().int(),
  indexedAt: z.string(),
});
export const ListSessionsResponse = z.object({
  sessions: z.array(SessionItem),
  cursor: z.string().optional(),
});

export type ThreadView = z.output<typeof ThreadView>;
export type SessionItem = z.output<typeof SessionItem>;
