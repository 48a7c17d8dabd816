import type { LanguageModel } from 'ai';
import type { Conversation, Message } from '../conversations/index.ts';
import type { Fragment, Queryable, Sql } from '../db/index.ts';
import type { Outbound } from '../outbound/index.ts';
import type { Part, StartFrame } from '../parts/index.ts';
import type { ToolLimits } from '../tools/index.ts';
import type { Npc, ProviderKind, ResolvedModel, VillageSettings } from '../village/index.ts';
import type { ReplyLimits } from './bounds.ts';
import type { CheckpointBatch } from './checkpoint.ts';

// What a turn is given: the process's parts (TurnDeps) and this turn's plan (TurnPlan), as routes.ts makes them.

export interface TurnDeps {
  sql: Sql;
  instanceId: number;
  /** Shared by every reply of this process (turnRoutes makes it). */
  checkpoints: CheckpointBatch<Part[]>;
  chunkTimeoutMs: number;
  /** Longest the claim's COMMIT is waited for before the claim is looked up (15 s unless given). */
  commitWaitMs?: number;
  dataDir: string;
  toolOutbound: Outbound;
  toolLimits?: ToolLimits;
  /** Most model steps (tool rounds) in one reply. */
  maxSteps?: number;
  /** How many characters of Parts, and how long, one reply may take. */
  replyLimits?: ReplyLimits;
  log: (message: string, error?: unknown) => void;
  /** After a first exchange, ask its Model for a short title (title.ts); off: the first Message's words. */
  summariseTitles?: boolean;
  /** The AI SDK's OpenTelemetry spans on every Provider call (telemetry.ts). */
  telemetry?: boolean;
}

export interface Speaker {
  npc: Npc;
  resolved: ResolvedModel;
  model: LanguageModel;
  kind: ProviderKind | undefined;
}

export interface TurnPlan {
  conversation: Conversation;
  participants: Npc[];
  speaker: Speaker;
  playerMessage: Message;
  /** The first reply's row, written with the claim (see beginPlayerTurn). */
  replyId: string;
  /** Settles once the claim is stored (see beginPlayerTurn): its reply starts to be shown before, and waits here. */
  committed?: Promise<void>;
  settings: VillageSettings;
  playerId: string;
  /**
   * What the Player and the Village had spent today when the claim admitted the turn (under the Player's lock, a
   * moment before): the first Provider call is judged on it, with no read of its own; every later one reads afresh.
   */
  spentToday?: { mine: number; village: number };
  /** Who `{{user}}` is in an NPC's text (the Player's handle). */
  playerName?: string;
  /** The Model for another NPC of the Party, or a reason it has none (checked when it is handed over to). */
  speakerFor(npc: Npc): Speaker | string;
  /** Told of each reply as it starts, with a way to read its Parts as they stand (replies/ follows it). */
  track?: (start: StartFrame, parts: () => Part[]) => void;
  /**
   * The turn's end, when it comes with a reply's last write (nothing follows that reply): `told` is sent in that
   * statement with the claim's release, and `released` is given its rows. Without it the caller releases the claim.
   */
  endTurn?: {
    told?: (q: Queryable) => Fragment;
    released: (rows: { id: string }[]) => void;
    /** The claim's COMMIT went unanswered and could not be looked up: the caller settles it later (undecided.ts). */
    undecided?: () => void;
  };
}
