import { CID } from 'multiformats/cid';
import { expect, it } from 'vitest';
import { relayOp } from '../../src/appview/indexer.ts';
import { isValidRecord } from '../../src/lexicon/index.ts';

// What the relay's reader decides about a record travels with its op: the store skips it for that reason, and
// refusing is cheap (the index reads every record any repo writes, most of a hostile stream refused).
const DID = 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa';
const cid = CID.parse('bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm');
const event = (record: unknown) =>
  ({
    event: 'create',
    seq: 7,
    did: DID,
    collection: 'click.aligned.chat.session',
    rkey: '3kabcdefghij2',
    cid,
    record,
    rev: '3kabcdefghij2',
  }) as never;
const session = { $type: 'click.aligned.chat.session', title: 'T', createdAt: '2026-11-01T00:00:00.000Z' };

it('a record too deep to convert comes out refused, with why, and never converted', () => {
  let deep: unknown = 'bottom';
  for (let i = 0; i < 2000; i++) deep = [deep];
  const op = relayOp(event({ ...session, x: deep }));
  expect(op).toMatchObject({ kind: 'upsert', record: null, refused: 'nested too deeply', at: 7 });
});

it('a record of a sane shape comes out in its JSON form, not refused', () => {
  const op = relayOp(event({ ...session, ref: cid, bytes: new Uint8Array([1, 2]) }));
  expect(op).toMatchObject({ kind: 'upsert', record: { ...session, ref: { $link: cid.toString() } } });
  expect('refused' in op).toBe(false);
});

it('validating leaves the stack trace limit as it found it, whatever the record', () => {
  const before = Error.stackTraceLimit;
  const throwing = {
    ...session,
    get title() {
      throw new Error('a getter that throws');
    },
  };
  for (const record of [session, { ...session, title: 5 }, null, 'x', throwing, { $link: 'not a cid' }]) {
    try {
      isValidRecord('click.aligned.chat.session', record);
    } catch {}
    expect(Error.stackTraceLimit).toBe(before);
  }
  expect(isValidRecord('click.aligned.chat.session', session)).toBe(true);
  expect(isValidRecord('click.aligned.chat.session', { ...session, title: 5 })).toBe(false);
  expect(new Error('after').stack).toContain('relayOp.test.ts');
});
