import { z } from 'zod';
import { FilePart, UrlPart, UsageSchema } from '../parts/index.ts';

/**
 * A time: a `Date` on either side, an ISO 8601 string on the wire. The routes `z.encode` their answers (Dates
 * become strings; keys the contract does not name are dropped, so an internal field never leaks) and the web
 * app `z.decode`s them (strings become Dates, and a malformed answer is an error, not a silent `undefined`).
 */
export const Time = z.codec(z.iso.datetime({ offset: true }), z.date(), {
  decode: (s) => new Date(s),
  encode: (d) => d.toISOString(),
});

export const MeResponse = z.object({ did: z.string(), handle: z.string().nullable() });
/** POST /api/auth/login: where the browser goes to sign in (the account's authorization server). */
export const LoginResponse = z.object({ url: z.string() });

export const SignInOptions = z.object({
  network: z.enum(['local', 'public']),
  demoAccounts: z.array(z.object({ handle: z.string(), password: z.string() })),
});

export const NpcView = z.object({
  id: z.uuid(),
  name: z.string(),
  jobTitle: z.string(),
  description: z.string(),
  prompt: z.string(),
  provider: z.string().nullable(),
  model: z.string().nullable(),
  thinking: z.boolean(),
  // A character card's fields (issue 29); `prompt` is its system prompt.
  personality: z.string(),
  scenario: z.string(),
  greeting: z.string(),
  alternateGreetings: z.array(z.string()),
  exampleMessages: z.string(),
  postHistoryInstructions: z.string(),
  creator: z.string(),
  creatorNotes: z.string(),
  characterVersion: z.string(),
  tags: z.array(z.string()),
  extensions: z.record(z.string(), z.unknown()),
  /** The NPC's picture (from a card's PNG), or null. */
  avatarUrl: z.string().nullable(),
  createdAt: Time,
  updatedAt: Time,
});
export const NpcResponse = z.object({ npc: NpcView });
export const NpcListResponse = z.object({ npcs: z.array(NpcView) });
/** POST /api/npcs/import: the NPC a character card made, and what changed on the way in. */
export const ImportedNpcResponse = NpcResponse.extend({
  lorebookEntries: z.number().int(),
  /** Whether an NPC of the same card was updated (`?update=<id>`) rather than a new one made. */
  updated: z.boolean(),
  notes: z.array(z.string()),
});

/** A lorebook: a card's own, or a World Info file attached to NPCs. */
export const LorebookView = z.object({
  id: z.uuid(),
  name: z.string(),
  entries: z.number().int(),
  npcIds: z.array(z.uuid()),
  /** A card's own book (it goes with its card: not attached to other NPCs). */
  embedded: z.boolean().default(false),
});
export const LorebookListResponse = z.object({ lorebooks: z.array(LorebookView) });
export const ImportedLorebookResponse = z.object({ lorebook: LorebookView });
/** One of an NPC's lorebooks, whole, for its editor: the book as the card had it (entries kept opaque past the
 *  fields the editor shows) and, in words, the keys that never match (a regex refused, or too long). */
export const NpcLorebook = z.object({
  id: z.uuid(),
  name: z.string(),
  /** The card's own book (exported with it); else World Info attached to this NPC. */
  embedded: z.boolean(),
  book: z.record(z.string(), z.unknown()),
  problems: z.array(z.string()),
});
export const NpcLorebooksResponse = z.object({ lorebooks: z.array(NpcLorebook) });
/** PUT /api/lorebooks/:id: the edited book's keys that never match, in words. */
export const LorebookProblemsResponse = NpcLorebook.pick({ problems: true });

export const PublicationStatus = z.enum(['publishing', 'published', 'unpublishing', 'failed']);

/** A Conversation as its Player sees it (the rolling summary and the turn claim stay on the server). */
export const ConversationView = z.object({
  id: z.uuid(),
  title: z.string().nullable(),
  /** In a Party: one NPC answers each Message, or each NPC in turn. */
  replyMode: z.enum(['one', 'each']),
  createdAt: Time,
  updatedAt: Time,
});
export const ConversationListItem = ConversationView.extend({
  npcIds: z.array(z.uuid()),
  publication: PublicationStatus.nullable(),
});
export const ConversationListResponse = z.object({
  conversations: z.array(ConversationListItem),
  /** Pass back as `cursor` for the next page; null on the last. */
  cursor: z.string().nullable(),
});
export const ConversationResponse = z.object({ conversation: ConversationView });
/** POST /api/conversations/import: the Conversation made, how many Messages it holds, and which NPCs were made for it. */
export const ConversationImported = z.object({
  conversation: ConversationView,
  participants: z.array(NpcView),
  messages: z.number().int(),
  createdNpcs: z.array(z.string()),
});
export const ConversationCreated = z.object({
  conversation: ConversationView,
  participants: z.array(NpcView),
});

export const MessageStatus = z.enum([
  'streaming',
  'complete',
  'truncated',
  'stopped',
  'failed',
  'interrupted',
]);
export const MessageView = z.object({
  id: z.uuid(),
  /** A bigint, as a string: Messages are ordered by it. */
  seq: z.string(),
  role: z.enum(['player', 'npc']),
  npcId: z.uuid().nullable(),
  npcName: z.string().nullable(),
  /** Parts as stored; a kind this build does not know is passed on and ignored by the fold (ADR 0007). */
  parts: z.array(z.unknown()),
  text: z.string(),
  status: MessageStatus,
  error: z.string().nullable(),
  provider: z.string().nullable(),
  model: z.string().nullable(),
  usage: UsageSchema.nullable(),
  costUsd: z.number().nullable(),
  createdAt: Time,
  /** The Message it follows in the Conversation tree; null for a first Message (ADR 0042). */
  parentId: z.uuid().nullable(),
  /**
   * In a transcript page, its place among its siblings (the same parent), oldest first: a count over one is a
   * fork. Numbers and the two neighbours, not the list, so a page stays small however often a turn was redone.
   */
  branch: z
    .object({
      index: z.number().int().nonnegative(),
      count: z.number().int().positive(),
      previous: z.uuid().nullable(),
      next: z.uuid().nullable(),
    })
    .optional(),
});
export const MessagePage = z.object({
  messages: z.array(MessageView),
  /** Pass back as `before` for older Messages; null when there are none. */
  before: z.string().nullable(),
});
export const ConversationPage = MessagePage.extend({
  conversation: ConversationView,
  participants: z.array(NpcView),
});

/** GET /api/search: a Player's Messages holding every word, best first. */
export const SearchHitView = z.object({
  conversationId: z.uuid(),
  conversationTitle: z.string().nullable(),
  messageId: z.uuid(),
  seq: z.string(),
  role: z.enum(['player', 'npc']),
  npcName: z.string().nullable(),
  createdAt: Time,
  /** Runs of text; `hit` marks the matched words (render as text, never as HTML). */
  snippet: z.array(z.object({ text: z.string(), hit: z.boolean() })),
});
export const SearchResponse = z.object({ results: z.array(SearchHitView) });

/** What an NPC may use: a kind, and for a Skill or an MCP Server, which one (GET /api/npcs/:id/grants). */
export const GrantView = z.object({
  kind: z.string(),
  skillId: z.uuid().nullable(),
  mcpServerId: z.uuid().nullable(),
});
export const GrantListResponse = z.object({ grants: z.array(GrantView) });

export const SkillView = z.object({
  id: z.uuid(),
  name: z.string(),
  description: z.string(),
  instructions: z.string(),
});
export const SkillResponse = z.object({ skill: SkillView });
export const SkillListResponse = z.object({ skills: z.array(SkillView) });

export const MemoryView = z.object({
  id: z.uuid(),
  text: z.string(),
  /** The NPC that remembered it; null when the Player wrote it. */
  npcName: z.string().nullable(),
  createdAt: Time,
});
export const MemoryResponse = z.object({ memory: MemoryView });
export const MemoryListResponse = z.object({ memories: z.array(MemoryView) });

/** An MCP Server: its header values are secrets, so only their names are ever answered. */
export const McpServerView = z.object({
  id: z.uuid(),
  name: z.string(),
  url: z.string(),
  headerNames: z.array(z.string()),
});
export const McpServerResponse = z.object({ server: McpServerView });
export const McpServerListResponse = z.object({ servers: z.array(McpServerView) });

/** An upload or an attached page, as the Part a Message will carry (POST …/attachments, …/attachments/url). */
export const AttachmentView = z.discriminatedUnion('type', [FilePart, UrlPart]);

/** What a Provider's Model can do, as far as this instance knows (GET /api/models). */
export const ModelInfo = z.object({
  provider: z.string(),
  model: z.string(),
  /** Whether it returns visible reasoning: an NPC's Thinking setting has no effect when it does not. */
  thinking: z.enum(['supported', 'unsupported', 'unknown']),
  /** Which attachments it can read besides text: images and PDFs, each known either way or not known. */
  images: z.enum(['supported', 'unsupported', 'unknown']),
  pdfs: z.enum(['supported', 'unsupported', 'unknown']),
});

export const VillageView = z.object({
  settings: z.object({
    defaultProvider: z.string().nullable(),
    defaultModel: z.string().nullable(),
    hopLimit: z.number(),
    historyBudget: z.number(),
    sandboxQuotaMb: z.number(),
    turnsPerMinute: z.number(),
    concurrentStreams: z.number(),
    playerDailyTokens: z.number(),
    villageDailyTokens: z.number(),
    maxMessageChars: z.number(),
    maxNpcs: z.number(),
    maxConversations: z.number(),
    maxAttachmentMb: z.number(),
    maxAttachmentsPerMessage: z.number(),
    playerAttachmentMb: z.number(),
    attachmentTypes: z.array(z.string()),
    maxOutputTokens: z.number().nullable(),
    playerStorageMb: z.number(),
  }),
  providers: z.array(
    z.object({ id: z.string(), kind: z.enum(['openai', 'anthropic', 'google', 'compatible', 'demo']) }),
  ),
  isAdmin: z.boolean(),
});
export const VillageSettingsResponse = VillageView.pick({ settings: true });

const UsageFigures = {
  inputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number().nullable(),
  replies: z.number(),
};
export const UsageResponse = z.object({
  points: z.array(z.object({ day: z.string(), key: z.string(), label: z.string(), ...UsageFigures })),
  totals: z.object(UsageFigures),
  /** Bytes the Player stores, by kind, and the most each Player may (ADR 0053). */
  storage: z.object({
    messages: z.number(),
    attachments: z.number(),
    sandbox: z.number(),
    memory: z.number(),
    used: z.number(),
    quota: z.number(),
  }),
});

export type MeResponse = z.output<typeof MeResponse>;
export type SignInOptions = z.output<typeof SignInOptions>;
export type NpcView = z.output<typeof NpcView>;
export type ConversationView = z.output<typeof ConversationView>;
export type ConversationListItem = z.output<typeof ConversationListItem>;
export type MessageView = z.output<typeof MessageView>;
export type VillageView = z.output<typeof VillageView>;
export type UsageResponse = z.output<typeof UsageResponse>;
export type SkillView = z.output<typeof SkillView>;
export type MemoryView = z.output<typeof MemoryView>;
