import type { Choices } from '../redaction/index.ts';

/**
 * What live publishing may send on its own (issue 24, ADR 0046): only turns that extend the path the Player
 * reviewed, and never the replies to a turn they held back. Pure: the callers read and write.
 */

/** The path shown still starts with the reviewed one: new turns may follow it live. */
export function extendsReviewed(path: readonly string[], reviewed: readonly string[]): boolean {
  return reviewed.length <= path.length && reviewed.every((id, i) => path[i] === id);
}

/**
 * The replies to hold with their question: every NPC turn not yet published that answers a withheld Player
 * turn (the replies after it, up to the next Player turn), unless the Player chose for it explicitly
 * (`withheld` set either way: a release on the publish page is `withheld: false`).
 */
export function repliesToHold(
  path: readonly { id: string; role: 'player' | 'npc' }[],
  choices: Choices,
  published: ReadonlySet<string>,
): string[] {
  const held: string[] = [];
  let questionHeld = false;
  for (const turn of path) {
    if (turn.role === 'player') questionHeld = choices[turn.id]?.withheld === true;
    else if (questionHeld && !published.has(turn.id) && choices[turn.id]?.withheld === undefined)
      held.push(turn.id);
  }
  return held;
}
