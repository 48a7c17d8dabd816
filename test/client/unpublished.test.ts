import { expect, it } from 'vitest';
import { missingOf } from '../../client/src/reader/Unpublished.tsx';

// Only the reader's API saying what is missing takes an open thread off the screen: any other 404 (a proxy's
// page, an error body of another shape) says nothing about the thread, and the page keeps asking.
it('a 404 takes the thread or its page away only when the answer says which is missing', () => {
  expect(missingOf({ missing: 'thread' })).toBe('thread');
  expect(missingOf({ missing: 'page' })).toBe('page');
  for (const other of [undefined, null, {}, { missing: 'Thread' }, { missing: true }, 'thread', []])
    expect(missingOf(other)).toBeNull();
});
