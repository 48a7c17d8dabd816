import { jsonToIpld } from '@atproto/common-web';
import { cidForRecord } from '@atproto/repo';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { cidMatches, parseJetstreamMessage } from '../../src/appview/jetstreamEvent.ts';

// The Jetstream reader's pure core: whatever an instance sends, it never throws, and it keeps the cursor moving.
const did = fc.constantFrom('did:plc:aaaaaaaaaaaaaaaaaaaaaaaa', 'did:web:example.com', 'not-a-did', '');
const collection = fc.constantFrom(
  'click.aligned.chat.message',
  'click.aligned.chat.session',
  'app.bsky.feed.post',
  '',
);
const event = fc.record(
  {
    did,
    // Times from the past up to far in the future (ten minutes ahead is the bound), and things that are not times.
    time_us: fc.oneof(fc.nat(), fc.integer({ min: 0, max: 4e15 }), fc.double(), fc.string()),
    kind: fc.constantFrom('commit', 'identity', 'account', 'other'),
    commit: fc.record(
      {
        operation: fc.constantFrom('create', 'update', 'delete', 'bogus'),
        collection,
        rkey: fc.oneof(fc.string(), fc.constant('3kabc')),
        record: fc.oneof(fc.jsonValue(), fc.dictionary(fc.string(), fc.jsonValue())),
        cid: fc.string(),
      },
      { requiredKeys: [] },
    ),
    account: fc.record({ active: fc.boolean(), status: fc.string() }, { requiredKeys: [] }),
  },
  { requiredKeys: [] },
);

it('never throws on any text; any event with a time moves the cursor to it, unless the time is in the future', () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string(),
        fc.jsonValue().map((v) => JSON.stringify(v)),
        event.map((e) => JSON.stringify(e)),
        // A kind this code does not know, with a time near now or far ahead.
        fc.integer({ min: 0, max: 4e15 }).map((t) => JSON.stringify({ time_us: t, kind: 'unknown' })),
      ),
      (text) => {
        const parsed = parseJetstreamMessage(text);
        let json: { time_us?: unknown } | undefined;
        try {
          json = JSON.parse(text);
        } catch {}
        const t = json && typeof json === 'object' ? json.time_us : undefined;
        const at = parsed.kind === 'op' || parsed.kind === 'record' ? parsed.op.at : parsed.at;
        const limit = (Date.now() + 10 * 60_000) * 1000;
        if (Number.isSafeInteger(t) && (t as number) >= 0) expect(at).toBe((t as number) > limit ? null : t);
        // Only our collections and well-formed DIDs and keys become writes.
        if (parsed.kind === 'record') {
          expect(parsed.op.collection).toMatch(/^click\.aligned\.chat\.(message|session)$/);
          expect(parsed.op.did.startsWith('did:')).toBe(true);
        }
      },
    ),
    { numRuns: 3000 },
  );
});

it('a record is taken with its own cid only', async () => {
  await fc.assert(
    fc.asyncProperty(fc.string(), fc.string(), async (a, b) => {
      const record = { $type: 'click.aligned.chat.session', title: a, createdAt: '2026-11-30T00:00:00.000Z' };
      const cid = (await cidForRecord(jsonToIpld(record) as never)).toString();
      expect(await cidMatches(cid, record)).toBe(true);
      expect(await cidMatches(cid, { ...record, title: `${a}${b}x` })).toBe(false);
      expect(await cidMatches('not a cid', record)).toBe(false);
    }),
    { numRuns: 200 },
  );
});

it('a record with a blob is taken with its own cid: a session whose agent has a picture', async () => {
  const record = {
    $type: 'click.aligned.chat.session',
    title: 'Harbour',
    createdAt: '2026-11-30T00:00:00.000Z',
    agents: [
      {
        name: 'Ada',
        avatar: {
          $type: 'blob',
          ref: { $link: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy' },
          mimeType: 'image/png',
          size: 1234,
        },
      },
    ],
  };
  // Its cid as @atproto/lex-json's reading of it hashes (the one a PDS gives it), computed there once.
  expect(await cidMatches('bafyreia3qsep4gkw5romhealyiejadkxmhutzccfkleclpvfxh2rcpliqm', record)).toBe(true);
});
