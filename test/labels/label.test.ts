import { Secp256k1Keypair } from '@atproto/crypto';
import { cborEncode } from '@atproto/lex-cbor';
import { ErrorFrame, MessageFrame } from '@atproto/xrpc-server';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { decodeFrame, type Label, MAX_LABELS_PER_FRAME, signedBytes } from '../../src/labels/label.ts';
import { storeLabels } from '../../src/labels/store.ts';
import type { TestDatabase } from '../support/database.ts';
import { createTestDatabase } from '../support/db.ts';

const SRC = 'did:web:labeler.example';
const URI = 'at://did:plc:author0000000000000000/click.aligned.chat.session/3kabcdefghijk';
const label = (over: Partial<Label> = {}) => ({
  ver: 1,
  src: SRC,
  uri: URI,
  val: '!hide',
  cts: '2026-12-01T00:00:00.000Z',
  sig: new Uint8Array(64),
  ...over,
});
const frame = (body: unknown) => new MessageFrame(body as never, { type: '#labels' }).toBytes();

describe('a subscribeLabels frame, decoded and bounded', () => {
  it('keeps well-formed labels and counts the rest', () => {
    const m = decodeFrame(
      frame({ seq: 7, labels: [label(), label({ uri: 'https://example.com' }), { val: 1 }] }),
    );
    expect(m).toMatchObject({ kind: 'labels', seq: 7, malformed: 2 });
    expect(m.kind === 'labels' && m.labels.map((l) => l.uri)).toEqual([URI]);
  });

  it('refuses a frame of more labels than the bound whole, and says its seq so the cursor passes it', () => {
    const many = Array.from({ length: MAX_LABELS_PER_FRAME + 1 }, () => label());
    expect(decodeFrame(frame({ seq: 9, labels: many }))).toEqual({
      kind: 'refused',
      reason: 'too many labels',
      seq: 9,
    });
  });

  it('refuses bytes that are not a frame, and reads #info and error frames', () => {
    expect(decodeFrame(new Uint8Array([1, 2, 3]))).toMatchObject({ kind: 'refused' });
    const info = new MessageFrame({ name: 'OutdatedCursor' } as never, { type: '#info' }).toBytes();
    expect(decodeFrame(info)).toMatchObject({ kind: 'info', name: 'OutdatedCursor' });
    expect(decodeFrame(new ErrorFrame({ error: 'FutureCursor' }).toBytes())).toMatchObject({
      kind: 'error',
      code: 'FutureCursor',
    });
  });

  it('signs over every field the labeler wrote, unknown ones too, and never over sig', async () => {
    const key = await Secp256k1Keypair.create();
    const { sig: _sig, ...unsigned } = { ...label(), extra: 'kept' };
    const sig = await key.sign(cborEncode(unsigned));
    const m = decodeFrame(frame({ seq: 1, labels: [{ ...unsigned, sig }] }));
    if (m.kind !== 'labels') throw new Error('not decoded');
    expect(Buffer.from(signedBytes(m.labels[0]!))).toEqual(Buffer.from(cborEncode(unsigned)));
  });
});

describe('stored labels: the newest per labeler, subject and value', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('a negation is not undone by the older label it negates arriving again (a replay)', async () => {
    const older = label({ cts: '2026-12-01T00:00:00.000Z' });
    const negation = label({ cts: '2026-12-01T00:05:00.000Z', neg: true });
    await storeLabels(db.sql, SRC, 1, [older as Label]);
    await storeLabels(db.sql, SRC, 2, [negation as Label]);
    await storeLabels(db.sql, SRC, 1, [older as Label]);
    const rows = await db.sql<{ neg: boolean }[]>`select neg from labels where src = ${SRC} and uri = ${URI}`;
    expect(rows).toEqual([{ neg: true }]);
  });

  it('every label a frame keeps, PostgreSQL stores: any date, any text a labeler sends', async () => {
    // Any instant JavaScript can hold (years -271821 to 275760) as ISO text, as often within years 1–9999 and
    // about their edges, and strings with NULs among them.
    const span = (min: string, max: string) =>
      fc.date({ min: new Date(min), max: new Date(max), noInvalidDate: true });
    const when = fc
      .oneof(
        fc.date({ noInvalidDate: true }),
        span('0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z'),
        span('-000001-12-31T00:00:00.000Z', '0001-01-02T00:00:00.000Z'),
        span('9999-12-31T00:00:00.000Z', '+010000-01-02T00:00:00.000Z'),
      )
      .map((d) => d.toISOString());
    // Any code points, so PostgreSQL cannot compress them under its key's bound.
    const long = fc.string({
      unit: 'binary',
      minLength: 1000,
      maxLength: 2500,
    });
    const text = fc.string({
      unit: fc.constantFrom('a', '!', '\u0000', 'é', '-'),
      minLength: 1,
      maxLength: 8,
    });
    let kept = 0;
    let refused = 0;
    await fc.assert(
      // A record key of up to 2,500 characters of up to 4 bytes each: past what the labels' key can hold.
      fc.asyncProperty(when, fc.option(when), text, fc.oneof(text, long), async (cts, exp, val, rkey) => {
        const uri = `at://did:plc:author0000000000000000/click.aligned.chat.session/${rkey}`;
        const m = decodeFrame(frame({ seq: 1, labels: [label({ cts, val, uri, ...(exp ? { exp } : {}) })] }));
        if (m.kind !== 'labels' || !m.labels.length) return void refused++;
        kept++;
        await storeLabels(db.sql, SRC, 1, m.labels);
      }),
      { numRuns: 150 },
    );
    // Both sides were reached: the property says something of each.
    expect(kept).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
    // The edges themselves are kept and stored.
    const edges = ['0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z'];
    const m = decodeFrame(frame({ seq: 2, labels: edges.map((cts, i) => label({ cts, val: `edge${i}` })) }));
    expect(m.kind === 'labels' && m.labels.length).toBe(2);
    if (m.kind === 'labels') await storeLabels(db.sql, SRC, 2, m.labels);
  });
});

it('LABELERS names labelers by DID, with their service when it is not read from the DID document', () => {
  expect(loadConfig({}).labelers).toEqual([]);
  expect(
    loadConfig({ LABELERS: 'did:web:a.example, did:plc:abc234|https://labels.example' }).labelers,
  ).toEqual([{ did: 'did:web:a.example' }, { did: 'did:plc:abc234', url: 'https://labels.example' }]);
  expect(() => loadConfig({ LABELERS: 'labels.example' })).toThrow(ConfigError);
});
