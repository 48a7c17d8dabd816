import fc from 'fast-check';
import { expect, it } from 'vitest';
import { returnPath } from '../../src/auth/returnPath.ts';

const ORIGIN = 'https://app.example';

it('whatever it is given, a return path it keeps stays on this site and off the sign-in routes', () => {
  const pieces = fc.constantFrom(
    '/',
    '//',
    '\\',
    '/\\',
    ':',
    '@',
    '?',
    '#',
    '.',
    '..',
    '%2f',
    '%5c',
    'http:',
    ' ',
    '\t',
    'a',
    'c',
  );
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string({ maxLength: 60 }),
        fc.array(pieces, { maxLength: 12 }).map((a) => a.join('')),
      ),
      (input) => {
        const kept = returnPath(input);
        if (kept === null) return;
        expect(kept.startsWith('/') && !kept.startsWith('//')).toBe(true);
        const url = new URL(kept, ORIGIN);
        expect(url.origin).toBe(ORIGIN);
        expect(url.pathname).not.toMatch(/^\/(api|oauth|xrpc)(\/|$)/);
        // What a browser makes of it in a Location header is the same place.
        expect(new URL(kept, 'https://other.example').pathname).toBe(url.pathname);
      },
    ),
    { numRuns: 5000 },
  );
});

it('keeps plain paths with their query and fragment, and refuses what leads elsewhere', () => {
  expect(returnPath('/c/1?at=2#end')).toBe('/c/1?at=2#end');
  expect(returnPath('/')).toBe('/');
  expect(returnPath('/c/../npcs')).toBe('/npcs');
  expect(returnPath('/..//evil.example')).toBeNull(); // found by the property above
  for (const bad of [
    '',
    'c/1',
    '//evil.example',
    '/\\evil.example',
    'https://evil.example',
    '/c/1\n',
    '/api/me',
    '/oauth/callback',
  ])
    expect(returnPath(bad), bad).toBeNull();
});
