export interface Candidate {
  id: string;
  name: string;
}

/**
 * Who answers: the NPC the Player addressed (by id, by @name, or by name at the start of the Message — the whole
 * name or any one word of it that no other NPC here shares, as SillyTavern's group chats do: "Tomas, …" is for
 * Brother Tomas), else
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
  const byPart = participants.filter((p) => partsOf(p.name).some((w) => addresses(lower, w, participants)));
  if (byPart.length === 1) return byPart[0];
  return participants.find((p) => p.id === lastSpeakerId) ?? participants[0];
}

function mentionIndex(text: string, name: string): number {
  const at = text.indexOf(`@${name}`);
  if (at >= 0) return at;
  return text.startsWith(`${name},`) || text.startsWith(`${name}:`) ? 0 : -1;
}

const partsOf = (name: string) =>
  name
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w.length > 1);

/** The Message opens on `word` ("Tomas, …", "tomas: …", "@Tomas …") and no other NPC's name has that word. */
function addresses(text: string, word: string, all: readonly Candidate[]): boolean {
  const opens =
    text.startsWith(`${word},`) ||
    text.startsWith(`${word}:`) ||
    new RegExp(`(^|\\s)@${escapeRe(word)}\\b`).test(text);
  return opens && all.filter((p) => partsOf(p.name).includes(word)).length === 1;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
