import { expect, it } from 'vitest';
import { chooseSpeaker } from '../../src/turn/speaker.ts';

// Issue 29: group chats route by any part of an NPC's name at the start of a Message, as SillyTavern's do.
const tomas = { id: 't', name: 'Brother Tomas' };
const ilse = { id: 'i', name: 'Sister Ilse' };
const hal = { id: 'h', name: 'Brother Hal' };

it('"Tomas, …" is for Brother Tomas, whoever spoke last', () => {
  expect(chooseSpeaker([ilse, tomas], 'Tomas, what do the ledgers say?', undefined, 'i')).toBe(tomas);
  expect(chooseSpeaker([ilse, tomas], 'ilse: and you?', undefined, 't')).toBe(ilse);
  expect(chooseSpeaker([ilse, tomas], 'so, @Tomas what now', undefined, 'i')).toBe(tomas);
});

it('a word two NPCs share names neither; a word inside the Message is no address', () => {
  expect(chooseSpeaker([tomas, hal, ilse], 'Brother, help me', undefined, 'i')).toBe(ilse);
  expect(chooseSpeaker([ilse, tomas], 'I asked Tomas, then left', undefined, 'i')).toBe(ilse);
  expect(chooseSpeaker([tomas, hal], 'Brother Hal, you?', undefined, 't')).toBe(hal);
});
