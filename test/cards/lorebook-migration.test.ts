import { expect, it } from 'vitest';
import { triggerEntries } from '../../src/cards/lorebook.ts';
import { booksOf } from '../../src/cards/store.ts';
import { migrate } from '../../src/db/index.ts';
import { createDatabaseBefore } from '../support/db.ts';

// Migration 042: lorebooks that issue 18's import stored as Player-wide Memory (rows marked `lorebook_of`, text
// "(key1, key2) content") become lorebooks of their NPC alone, and the Memory rows go.
it('moves lorebook Memories into a lorebook of their NPC, keyed as the rows say, and out of Memory', async () => {
  const db = await createDatabaseBefore((f) => f.startsWith('042_'));
  try {
    const sql = db.sql;
    const [p] = await sql`insert into players (did) values ('did:plc:old') returning id`;
    const npc = async (name: string) =>
      (await sql`insert into npcs (player_id, name) values (${p!.id}, ${name}) returning id`)[0]!
        .id as string;
    const seraphina = await npc('Seraphina');
    const tomas = await npc('Brother Tomas');
    const other = await npc('Ada');
    // Tomas's card was imported again since: he has his own book already.
    const [own] = await sql`insert into lorebooks (player_id, name, book)
      values (${p!.id}, 'Abbey', ${sql.json({ name: 'Abbey', entries: [{ keys: ['ledger'], content: 'L' }] })})
      returning id`;
    await sql`insert into npc_lorebooks (npc_id, lorebook_id, embedded) values (${tomas}, ${own!.id}, true)`;
    const mem = (text: string, of: string | null) =>
      sql`insert into memories (player_id, text, npc_name, lorebook_of, created_at)
        values (${p!.id}, ${text}, 'x', ${of}, clock_timestamp())`;
    await mem('(Eldoria, forest) The forest of Eldoria is ancient.', seraphina);
    await mem('(power, magic, ability) Seraphina’s magic heals.', seraphina);
    await mem('Always on: the glade is warded.', seraphina);
    await mem('(crypt) The crypt holds the old ledgers.', tomas);
    await mem('likes tea', null); // the Player's own note stays

    expect((await migrate(sql)).some((f) => f.startsWith('042_'))).toBe(true);

    const memories = await sql`select text, lorebook_of from memories`;
    expect(memories).toEqual([{ text: 'likes tea', lorebook_of: null }]);

    const [sBook] = await booksOf(sql, seraphina);
    expect(sBook).toMatchObject({ name: 'Seraphina' });
    expect(sBook!.entries.map((e) => [e.keys, e.content, e.constant, e.insertion_order])).toEqual([
      [['Eldoria', 'forest'], 'The forest of Eldoria is ancient.', false, 0],
      [['power', 'magic', 'ability'], 'Seraphina’s magic heals.', false, 1],
      [[], 'Always on: the glade is warded.', true, 2],
    ]);
    const embedded = await sql`select n.name, l.embedded from npc_lorebooks l join npcs n on n.id = l.npc_id
      order by n.name, l.embedded`;
    expect(embedded).toEqual([
      { name: 'Brother Tomas', embedded: false },
      { name: 'Brother Tomas', embedded: true },
      { name: 'Seraphina', embedded: true },
    ]);
    // Scoped: "magic" reaches Seraphina's prompt, and no other NPC's.
    const lore = (books: Awaited<ReturnType<typeof booksOf>>) =>
      triggerEntries(books, ['Tell me about magic']).map((t) => t.content);
    expect(lore(await booksOf(sql, seraphina))).toEqual([
      'Seraphina’s magic heals.',
      'Always on: the glade is warded.',
    ]);
    expect(lore(await booksOf(sql, other))).toEqual([]);
    expect((await booksOf(sql, tomas)).map((b) => b.entries.map((e) => e.keys))).toEqual([
      [['ledger']],
      [['crypt']],
    ]);
  } finally {
    await db.drop();
  }
});
