import type { ModelMessage } from 'ai';

export interface HistoryTurn {
  role: 'player' | 'npc';
  npcName: string | null;
  text: string;
}

/**
 * The text a turn is sent as. In a Party, an NPC's reply carries its author's name, so each NPC can tell its
 * colleagues apart and recognise its own answers; a solo Conversation is left byte-identical (ADR 0017).
 */
export function attributedText(turn: HistoryTurn, party: boolean): string {
  return party && turn.role === 'npc' && turn.npcName ? `[${turn.npcName}]: ${turn.text}` : turn.text;
}

/** History as the Provider receives it. Turns with no text (a reply stopped before its first word) are skipped. */
export function toModelMessages(turns: readonly HistoryTurn[], party: boolean): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const turn of turns) {
    if (!turn.text) continue;
    const content = attributedText(turn, party);
    out.push(turn.role === 'player' ? { role: 'user', content } : { role: 'assistant', content });
  }
  return out;
}
