import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Resolver, resolveAll } from '../../src/publish/resolve.ts';
import { shownHandle, shownStrings } from '../../src/publish/shown.ts';

/**
 * The strings of `v` a reader may be shown, by plain recursion: the oracle for small values. Its identifiers are
 * the generator's own, listed, not the implementation's pattern.
 */
const PLC = 'did:plc:ewvi7nxzyoun6zhxrhs64oiz';
/** Identifiers, and what of each is read: nothing, or an at-URI's path. */
const IDS = new Map([
  [PLC, ''],
  [`at://${PLC}/app.bsky.feed.post/3kabc`, '/app.bsky.feed.post/3kabc'],
  [`at://${PLC}`, ''],
  ['2026-12-01T10:00:00.000Z', ''],
  ['did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme', ''],
]);
function oracle(v: unknown, key?: string): string[] {
  if (key === 'cid' || key === '$type' || key === 'langs') return [];
  if (typeof v === 'string') {
    const read = IDS.has(v) ? IDS.get(v)! : v;
    return read || !IDS.has(v) ? [read] : [];
  }
  if (Array.isArray(v)) return v.flatMap((x) => oracle(x));
  if (v && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => oracle(x, k));
  return [];
}

const sorted = (xs: string[] | null) => (xs ? [...xs].sort() : xs);

describe("a linked record's shown strings", () => {
  it('are every string of it but its identifiers (DIDs, at-URIs of DIDs, CIDs, types), found anywhere in it', () => {
    const word = fc.oneof(
      fc.string(),
      fc.constantFrom(
        ...IDS.keys(),
        'ZEPHYR',
        'https://x.example/z',
        // Words shaped as identifiers are: read.
        'did:web:zephyr.example',
        'did:you: Zephyr was here',
        'did:plc:Zephyr',
        'did:zephyr:x',
        'did:webvh:abc:zephyr.example',
        `${PLC} and Zephyr`,
        'at://did:plc:abc/app.bsky.feed.post/3k and Zephyr',
        '2026-12-01 at Zephyr’s',
      ),
    );
    const key = fc.oneof(fc.string(), fc.constantFrom('cid', '$type', 'langs', 'text', 'uri'));
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        word,
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(key, tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(sorted(shownStrings(v))).toEqual(sorted(oracle(v)));
      }),
      { numRuns: 500 },
    );
  });

  it('a post: its text and link card, not its facets’ DIDs, and its reply’s strongRefs by their paths', () => {
    const post = {
      $type: 'app.bsky.feed.post',
      text: 'I met Zephyr',
      createdAt: '2026-12-01T10:00:00.000Z',
      facets: [
        { features: [{ $type: 'app.bsky.richtext.facet#mention', did: 'did:plc:ewvi7nxzyoun6zhxrhs64oiz' }] },
      ],
      reply: {
        root: { uri: 'at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/app.bsky.feed.post/3kabc', cid: 'bafyreiabc' },
        parent: { uri: 'at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/app.bsky.feed.post/3kabc', cid: 'bafyreiabc' },
      },
      embed: { external: { uri: 'https://zephyr.example', title: 'Zephyr’s page', description: '' } },
    };
    expect(sorted(shownStrings({ ...post, langs: ['en'] }))).toEqual(
      sorted([
        'I met Zephyr',
        'https://zephyr.example',
        'Zephyr’s page',
        '',
        '/app.bsky.feed.post/3kabc',
        '/app.bsky.feed.post/3kabc',
      ]),
    );
  });

  it('is null past its bounds, however deep or wide the record, and never throws', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(shownStrings(deep)).toBeNull();
    expect(shownStrings(Array.from({ length: 3_000 }, (_, i) => `w${i}`))).toBeNull();
    expect(shownStrings({ text: 'x'.repeat(50_001) })).toBeNull();
    expect(shownStrings(Array.from({ length: 10_000 }, () => 1))).toBeNull();
    // An array longer than a call's arguments may be (a spread of it would throw).
    expect(shownStrings({ text: 'a', many: new Array(1_000_000).fill(0) })).toBeNull();
    // Within them, all is read.
    expect(shownStrings(Array.from({ length: 2_000 }, (_, i) => `w${i}`))).toHaveLength(2_000);
  });
});

describe('the lookups of a publish', () => {
  it('never ask a did:web that spells a covered word for its document or records; every other DID is asked', async () => {
    const asked: string[] = [];
    const resolver: Resolver = {
      async handleToDid(handle) {
        asked.push(`handle ${handle}`);
        return handle === 'zed.test' ? 'did:web:zephyr.example' : 'did:plc:bob';
      },
      async identity(did) {
        asked.push(`identity ${did}`);
        return { handle: 'bob.test' };
      },
      async record(did) {
        asked.push(`record ${did}`);
        return { cid: 'bafyreia', shown: ['hello'] };
      },
    };
    const spelled = (did: string) => did === 'did:web:zephyr.example';
    const pointers = [
      { actor: 'zed.test', collection: 'app.bsky.feed.post', rkey: '3k1' },
      { actor: 'bob.test', collection: 'app.bsky.feed.post', rkey: '3k2' },
    ];
    const r = await resolveAll(resolver, pointers, ['zed.test', 'bob.test'], spelled);
    expect(asked.filter((a) => a.includes('zephyr'))).toEqual([]);
    expect(asked.sort()).toEqual(
      ['handle bob.test', 'handle zed.test', 'identity did:plc:bob', 'record did:plc:bob'].sort(),
    );
    // Still named by its DID, so the projection refuses it for that DID.
    expect(r.mentions.get('zed.test')).toBe('did:web:zephyr.example');
    expect(r.refs.get('at://zed.test/app.bsky.feed.post/3k1')?.uri).toBe(
      'at://did:web:zephyr.example/app.bsky.feed.post/3k1',
    );
    expect(r.refs.get('at://bob.test/app.bsky.feed.post/3k2')).toEqual({
      uri: 'at://did:plc:bob/app.bsky.feed.post/3k2',
      cid: 'bafyreia',
      shown: ['hello'],
    });
    expect(r.handles?.get('did:plc:bob')).toBe('bob.test');
  });
});

describe('the handle a DID document claims', () => {
  it('is read as a reader shows it, lower-cased and decoded from punycode; anything but a handle is none', () => {
    expect(shownHandle('Bob.Test')).toBe('bob.test');
    // "zéphyr.example": a cover of "Zéphyr" finds the Unicode spelling.
    expect(shownHandle('xn--zphyr-bsa.example')).toBe('xn--zphyr-bsa.example zéphyr.example');
    expect(shownHandle(undefined)).toBeNull();
    expect(shownHandle('handle.invalid')).toBeNull();
    expect(shownHandle(`${'zephyr'.repeat(100_000)}.example`)).toBeNull();
    expect(shownHandle('not a handle')).toBeNull();
  });
});
