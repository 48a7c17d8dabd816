import type { Request, Response } from 'express';
import { type Player, sessionPlayerJsonSql, sessionPlayerSql, sessionToken } from '../auth/index.ts';
import { hasBooksColumn } from '../cards/index.ts';
import {
  type Conversation,
  conversationFromJson,
  conversationJsonSql,
  lastPlayerTextSql,
  participantsJsonSql,
} from '../conversations/index.ts';
import type { Sql } from '../db/index.ts';
import { AppError, isUuid, notFound, unauthenticated } from '../http/index.ts';
import { blockedSql } from '../moderation/index.ts';
import {
  type Npc,
  npcFromJson,
  type ProviderRegistry,
  resolveModel,
  type VillageSettings,
  villageSettingsJsonSql,
} from '../village/index.ts';
import type { Speaker } from './run.ts';
import { chooseSpeaker } from './speaker.ts';

interface AdmitDeps {
  sql: Sql;
  providers: ProviderRegistry;
  draining?: () => boolean;
}

/** What a turn's first round trip read: the session's Player and everything that can refuse the turn. */
export interface FirstReads {
  player: Player;
  conversation: Conversation | undefined;
  participants: Npc[];
  settings: VillageSettings;
  blocked: boolean;
  /** The Message a regenerate answers again ('' when not asked for). */
  lastText: string;
}

/**
 * The session and everything that can refuse a turn, read in one statement (one snapshot): the turn routes
 * resolve their own session (its Player's id as a subquery in each part), where `requireSession` would take a
 * round trip of its own before these reads — on the hot path, one of the start frame's few. One statement, not
 * five side by side: ten turns starting at once were fifty statements for the database's cores, which the
 * server and the Provider's stream share, and a larger pool made the start frame slower, not faster.
 * Answers 401 as `requireSession` does. Participants of a Conversation that is not the caller's are read but
 * never used.
 */
export async function readFirst(
  deps: AdmitDeps,
  req: Request,
  res: Response,
  options: { lastText?: boolean } = {},
): Promise<FirstReads> {
  const token = sessionToken(req);
  if (!token) throw unauthenticated();
  const id = req.params.id;
  const known = isUuid(id);
  const { sql } = deps;
  const player = () => sessionPlayerSql(sql, token);
  const [row] = await sql<FirstRow[]>`select
    ${sessionPlayerJsonSql(sql, token)} as player,
    ${known ? conversationJsonSql(sql, player(), id) : sql`null::jsonb`} as conversation,
    ${known ? participantsJsonSql(sql, id, { more: hasBooksColumn(sql) }) : sql`'[]'::jsonb`} as participants,
    ${villageSettingsJsonSql(sql)} as settings,
    ${blockedSql(sql, player())} as blocked,
    ${known && options.lastText ? lastPlayerTextSql(sql, player(), id) : sql`''`} as "lastText"`;
  const first = row!;
  if (!first.player) throw unauthenticated();
  res.locals.player = first.player;
  return {
    player: first.player,
    conversation: conversationFromJson(first.conversation),
    participants: first.participants.map(npcFromJson),
    settings: first.settings,
    blocked: first.blocked,
    lastText: first.lastText,
  };
}

/** readFirst's one row, as PostgreSQL gives it (JSON parsed; dates still strings). */
interface FirstRow {
  player: Player | null;
  conversation: Conversation | null;
  participants: Npc[];
  settings: VillageSettings;
  blocked: boolean;
  lastText: string;
}

/** Everything that can refuse a turn, in the seed's order, before any byte of the reply is sent. */
export function judge(
  deps: AdmitDeps,
  req: Request,
  first: FirstReads,
  text: string,
  npcId?: string,
  /** A new Message (its size is checked); a regenerate answers one already accepted. */
  fresh = false,
) {
  if (deps.draining?.())
    throw new AppError('SHUTTING_DOWN', 'This server is restarting. Send your Message again in a moment.', {
      retryAfter: 2,
    });
  if (!isUuid(req.params.id)) throw notFound('Conversation');
  const { conversation, participants, settings } = first;
  if (first.blocked)
    throw new AppError(
      'PLAYER_BLOCKED',
      "This instance's admins have stopped this account from starting replies.",
    );
  if (!conversation) throw notFound('Conversation');
  if (fresh && text.length > settings.maxMessageChars) {
    throw new AppError(
      'MESSAGE_TOO_LONG',
      `A Message may be at most ${settings.maxMessageChars.toLocaleString('en')} characters; this one has ${text.length.toLocaleString('en')}.`,
    );
  }
  if (participants.length === 0) {
    throw new AppError('NO_NPC', 'There is no NPC in this Conversation to answer. Add one first.');
  }
  const npc = chooseSpeaker(participants, text, npcId);
  if (!npc) throw new AppError('NPC_NOT_IN_CONVERSATION', 'That NPC is not in this Conversation.');
  // Step 5 of the refusal order: the first speaker's Model must resolve (throws the 400 otherwise).
  const speakerFor = (n: Npc): Speaker => {
    const resolved = resolveModel(n, settings);
    const model = deps.providers.languageModel(resolved);
    return { npc: n, resolved: resolved!, model, kind: deps.providers.kindOf(resolved!.provider) };
  };
  const speaker = speakerFor(npc);
  return {
    conversation,
    participants,
    settings,
    speaker,
    playerId: first.player.id,
    // NPCs handed over to later are checked then; a failure ends the turn with an error frame.
    speakerFor: (n: Npc) => {
      try {
        return speakerFor(n);
      } catch (e) {
        return e instanceof Error ? e.message : 'That NPC has no Model.';
      }
    },
  };
}
