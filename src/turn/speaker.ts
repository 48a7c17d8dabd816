export interface Candidate {
  id: string;
  name: string;
}

/**
 * Who answers: the NPC the Player addressed (by id, or by @name or name at the start of the Message), else
 * the only NPC there, else the one who spoke last, else the first to join. Pure.
 */
export function chooseSpeaker<T extends Candidate>(
  participants: readonly T[],
  text: string,
  addressedId?: string,
  lastSpeakerId?: string | null,
): T | undefined {
  if (addressedId) return participants.find((p) => p.id === addressedId);
  if (participants.length <= 1) return participants[0];
  const lower = text.toLowerCase();
  const mentioned = participants
    .map((p) => ({ p, at: mentionIndex(lower, p.name.toLowerCase()) }))
    .filter((m) => m.at >= 0)
    .sort((a, b) => a.at - b.at)[0];
  if (mentioned) return mentioned.p;
  return participants.find((p) => p.id === lastSpeakerId) ?? participants[0];
}

function mentionIndex(text: string, name: string): number {
  const at = text.indexOf(`@${name}`);
  if (at >= 0) return at;
  return text.startsWith(`${name},`) || text.startsWith(`${name}:`) ? 0 : -1;
}
