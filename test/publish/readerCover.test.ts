import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEEP_MS, readerCover } from '../../src/publish/readerCover.ts';
import { MAX_COVERED_CHARS } from '../../src/redaction/index.ts';
import { insertConversation } from '../support/conversations.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
let playerId: string;
const did = 'did:plc:readercoverreadercover';
beforeAll(async () => {
  db = await createTestDatabase();
  const [p] = await db.sql`insert into players (did, handle) values (${did}, 'reader.test') returning id`;
  playerId = p!.id as string;
});
afterAll(async () => {
  await db?.drop();
});

/** A Conversation published under `rkey` with these words covered; its session's at-uri. */
async function published(rkey: string, words: Record<string, string[]>): Promise<string> {
  const { conversationId } = await insertConversation(db.sql, playerId, {
    turns: [{ role: 'player', parts: [{ type: 'text', text: 'hello' }] }],
  });
  await db.sql`insert into publications (conversation_id, player_id, did, session_rkey, title, status)
    values (${conversationId}, ${playerId}, ${did}, ${rkey}, 't', 'published')`;
  await db.sql`insert into publication_drafts (conversation_id, session_rkey, words)
    values (${conversationId}, ${rkey}, ${db.sql.json(words)})`;
  return `at://${did}/click.aligned.chat.session/${rkey}`;
}

const BAR = '█';

describe("the reader's cover of a thread published from here", () => {
  it('is kept while the draft is as it was, made again at once when the Player covers more, and after a minute', async () => {
    let clock = 1_000_000;
    const coverOf = readerCover(db.sql, { now: () => clock });
    const uri = await published('3kreadera', { a: ['Zephyr'] });
    const first = await coverOf(uri);
    expect(first!.apply('Zephyr keeps the maps.')).toContain(BAR);
    expect(await coverOf(uri)).toBe(first);

    // Covered since (as a publish or covering at once writes the draft): the next read covers it.
    await db.sql`update publication_drafts set words = words || '{"b": ["Quinn"]}', updated_at = now()
      where session_rkey = '3kreadera'`;
    const second = await coverOf(uri);
    expect(second).not.toBe(first);
    expect(second!.apply('Ask Quinn.')).toContain(BAR);
    expect(await coverOf(uri)).toBe(second);

    clock += KEEP_MS;
    const third = await coverOf(uri);
    expect(third).not.toBe(second);
    expect(third!.apply('Zephyr and Quinn')).toBe(`${BAR.repeat(8)} and ${BAR.repeat(8)}`);
  });

  it('is none for a thread not published from here or with nothing covered', async () => {
    const coverOf = readerCover(db.sql);
    expect(await coverOf(`at://${did}/click.aligned.chat.session/3knosuchthread`)).toBeNull();
    expect(await coverOf('at://did:plc:someoneelse/click.aligned.chat.session/3kreadera')).toBeNull();
    expect(await coverOf(await published('3kreaderb', {}))).toBeNull();
  });

  it('keeps covers of at most so many needles between them, the least recently read dropped first', async () => {
    const coverOf = readerCover(db.sql, { maxNeedles: 3 });
    const a = await published('3kreaderc', { x: ['Alpha', 'Bravo'] });
    const b = await published('3kreaderd', { x: ['Charlie'] });
    const c = await published('3kreadere', { x: ['Delta'] });
    const keptA = await coverOf(a);
    const keptB = await coverOf(b);
    // A read again is the most recent: C's cover (2 + 1 + 1 needles, over 3) drops B, the least recently read.
    expect(await coverOf(a)).toBe(keptA);
    await coverOf(c);
    expect(await coverOf(a)).toBe(keptA);
    expect(await coverOf(b)).not.toBe(keptB);
  });

  it('covers what is looked up whole for a draft past the bounds a publish keeps to (stored before them)', async () => {
    const coverOf = readerCover(db.sql);
    const long = 'x'.repeat(MAX_COVERED_CHARS + 1);
    const cover = await coverOf(await published('3kreaderi', { x: [long] }));
    expect(cover!.apply('Anything at all')).toBe(BAR.repeat(8));
    expect(cover!.find('bob.test')).toEqual([{ start: 0, end: 8 }]);
  });

  it('counts each kept cover once, however reads of the same threads overlap', async () => {
    const coverOf = readerCover(db.sql, { maxNeedles: 3 });
    const uris = [
      await published('3kreaderf', { x: ['Echo', 'Foxtrot'] }),
      await published('3kreaderg', { x: ['Golf'] }),
      await published('3kreaderh', { x: ['Hotel', 'India'] }),
    ];
    for (let round = 0; round < 20; round++)
      await Promise.all(Array.from({ length: 12 }, (_, i) => coverOf(uris[(i * 7 + round) % 3]!)));
    const held = coverOf.held();
    expect(held.needles).toBe(held.counted);
    expect(held.needles).toBeLessThanOrEqual(3);
  });
});
