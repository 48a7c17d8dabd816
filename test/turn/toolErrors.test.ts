import { expect, it } from 'vitest';
import { toolErrorMessage } from '../../src/turn/fragments.ts';

// A failed tool call is shown to the Player as written here (issue 28: errors read like API docs).
it('a tool the NPC does not have, or arguments a tool does not take, read as what happened', () => {
  expect(
    toolErrorMessage(
      "AI_NoSuchToolError: Model tried to call unavailable tool 'catalogue_search'. Available tools: message_npc.",
    ),
  ).toBe(
    'The Model asked for a tool named “catalogue_search”, which this NPC does not have, so nothing ran. An NPC’s Tools are chosen on the NPCs page.',
  );
  expect(toolErrorMessage('AI_InvalidToolInputError: Invalid input for tool bash: expected a string')).toBe(
    'The Model called bash with arguments it does not take, so nothing ran (expected a string).',
  );
  // Any other failure keeps its own words, without the SDK's class name.
  expect(toolErrorMessage('AI_SomeOtherError: the sandbox is full')).toBe('the sandbox is full');
  expect(toolErrorMessage(new Error('timeout'))).toBe('timeout');
});
