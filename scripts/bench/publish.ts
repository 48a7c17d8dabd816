import { Agent } from '@atproto/api';
import { TID } from '@atproto/common-web';
import { startLocalApp } from '../../test/support/localnet.ts';
import type { Figure } from '../bench.ts';
import { round } from './stats.ts';

/**
 * Publishes a 1,000-turn Conversation to the local PDS through the Player's OAuth session, counting write
 * calls, and compares its wall time with bare applyWrites of the same records (200 a call) side by side.
 */
export async function* publishFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  let writeCalls = 0;
  const counting: typeof fetch = (input, init) => {
    const req = new Request(input, init);
    if (req.url.includes('com.atproto.repo.applyWrites')) writeCalls++;
    return fetch(req);
  };
  const local = await startLocalApp({ oauthFetch: counting, adminDatabaseUrl });
  try {
    const alice = await local.signInAs('alice.test');
    const sql = local.app.db.sql;
    const agent = new Agent(await local.app.running.oauth.restore(alice.did));
    const runs: { publish: number; bare: number; calls: number }[] = [];
    for (let run = 0; run < 3; run++) {
      const [npc] =
        await sql`insert into npcs (player_id, name) values (${alice.playerId}, 'Ada') returning id`;
      const [c] =
        await sql`insert into conversations (player_id, title) values (${alice.playerId}, 'Long') returning id`;
      await sql`insert into conversation_participants values (${c!.id}, ${npc!.id}, 0)`;
      await sql`
        insert into messages (conversation_id, role, npc_id, npc_name, parts, text, provider, model)
        select ${c!.id}, case when i % 2 = 0 then 'player' else 'npc' end,
          case when i % 2 = 0 then null else ${npc!.id}::uuid end, case when i % 2 = 0 then null else 'Ada' end,
          jsonb_build_array(jsonb_build_object('type', 'text', 'text',
            'Turn ' || i || ' ' || case when i % 10 = 1 then 'codename Pelican-7731 ' else '' end || repeat('words ', 40))),
          'Turn ' || i, 'fake', 'fake-model'
        from generate_series(1, 1000) i`;

      // As a Player does: one word redacted in the first turn, so the covering pass runs over every string.
      // Turn 1's text is 'Turn 1 codename Pelican-7731 words …': characters 16 to 28 are the codename.
      const [first] =
        await sql`select id from messages where conversation_id = ${c!.id} order by seq limit 1`;
      writeCalls = 0;
      const t0 = performance.now();
      const res = await local.app.api(`/api/conversations/${c!.id}/publication`, {
        method: 'PUT',
        body: { choices: { [first!.id as string]: { redactions: [{ start: 16, end: 28 }] } } },
        cookie: alice.cookie,
      });
      if (res.status !== 200) throw new Error(`publish failed: ${res.status} ${await res.text()}`);
      const publishMs = performance.now() - t0;
      const calls = writeCalls;

      // The same records, written bare under fresh rkeys.
      const records = await sql<{ collection: string; record: Record<string, unknown> }[]>`
        select collection, record from publication_records where conversation_id = ${c!.id} order by position`;
      // The figure is only meaningful if the covering pass did its work: the codename is covered in 100 turns
      // and in the default title made from the first.
      const written = JSON.stringify(records);
      if (/pelican/i.test(written) || written.split('████████').length - 1 !== 101)
        throw new Error('the covering pass did not cover the codename in every turn');
      const rkeys: string[] = [TID.nextStr()];
      for (let i = 1; i < records.length; i++) rkeys.push(TID.nextStr(rkeys[i - 1]));
      const writes = records.map((r, i) => ({
        $type: 'com.atproto.repo.applyWrites#create',
        collection: r.collection,
        rkey: rkeys[i]!,
        value: r.record,
      }));
      const t1 = performance.now();
      for (let i = 0; i < writes.length; i += 200) {
        await agent.com.atproto.repo.applyWrites({
          repo: alice.did,
          writes: writes.slice(i, i + 200) as never,
        });
      }
      const bareMs = performance.now() - t1;
      runs.push({ publish: publishMs, bare: bareMs, calls });

      await local.app.api(`/api/conversations/${c!.id}/publication`, {
        method: 'DELETE',
        cookie: alice.cookie,
      });
      for (let i = 0; i < writes.length; i += 200) {
        await agent.com.atproto.repo.applyWrites({
          repo: alice.did,
          writes: writes.slice(i, i + 200).map((w) => ({
            $type: 'com.atproto.repo.applyWrites#delete',
            collection: w.collection,
            rkey: w.rkey,
          })) as never,
        });
      }
    }
    const best = runs.slice(1); // the first run warms the PDS's caches
    const publish = best.reduce((s, r) => s + r.publish, 0) / best.length;
    const bare = best.reduce((s, r) => s + r.bare, 0) / best.length;
    yield {
      figure: 'publish_1000_calls',
      value: runs.at(-1)!.calls,
      unit: 'applyWrites calls',
      target: '6 (ceil(1001/200))',
    };
    yield {
      figure: 'publish_1000',
      value: round(publish / bare),
      unit: 'ratio',
      target: '<= 1.3',
      publish_ms: round(publish, 0),
      bare_ms: round(bare, 0),
    };
  } finally {
    await local.close();
  }
}
