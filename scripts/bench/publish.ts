import { Agent } from '@atproto/api';
import { TID } from '@atproto/common-web';
import { startLocalApp } from '../../test/support/localnet.ts';
import type { Figure } from '../bench.ts';
import { paired, round, settle, spreadOf } from './stats.ts';

type Write = { $type: string; collection: string; rkey: string; value: Record<string, unknown> };

/**
 * Publishes a 1,000-turn Conversation to the local PDS through the Player's OAuth session, counting write
 * calls, and compares its wall time with bare applyWrites of the same records (200 a call), in alternating
 * pairs after a warm-up round.
 */
export async function* publishFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  let writeCalls = 0;
  const counting: typeof fetch = async (input, init) => {
    const req = new Request(input, init);
    const res = await fetch(req);
    // When the PDS has rotated its DPoP nonce it answers 401 use_dpop_nonce, and the OAuth client sends the same
    // call again with the new one: one call of ours, not two.
    const nonceRefused =
      res.status === 401 && /use_dpop_nonce/.test(res.headers.get('www-authenticate') ?? '');
    if (req.url.includes('com.atproto.repo.applyWrites') && !nonceRefused) writeCalls++;
    return res;
  };
  const local = await startLocalApp({ oauthFetch: counting, adminDatabaseUrl });
  try {
    const alice = await local.signInAs('alice.test');
    const sql = local.app.db.sql;
    const agent = new Agent(await local.app.running.oauth.restore(alice.did));

    /** One publish of a fresh 1,000-turn Conversation, timed; unpublished after. */
    const publishOnce = async () => {
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
      settle();
      const t0 = performance.now();
      const res = await local.app.api(`/api/conversations/${c!.id}/publication`, {
        method: 'PUT',
        body: { choices: { [first!.id as string]: { redactions: [{ start: 16, end: 28 }] } } },
        cookie: alice.cookie,
      });
      if (res.status !== 200) throw new Error(`publish failed: ${res.status} ${await res.text()}`);
      const ms = performance.now() - t0;
      const calls = writeCalls;
      const records = await sql<{ collection: string; record: Record<string, unknown> }[]>`
        select collection, record from publication_records where conversation_id = ${c!.id} order by position`;
      // The figure is only meaningful if the covering pass did its work: the codename is covered in 100 turns
      // and in the default title made from the first.
      const written = JSON.stringify(records);
      if (/pelican/i.test(written) || written.split('████████').length - 1 !== 101)
        throw new Error('the covering pass did not cover the codename in every turn');
      await local.app.api(`/api/conversations/${c!.id}/publication`, {
        method: 'DELETE',
        cookie: alice.cookie,
      });
      const writes: Write[] = records.map((r) => ({
        $type: 'com.atproto.repo.applyWrites#create',
        collection: r.collection,
        rkey: '',
        value: r.record,
      }));
      return { ms, calls, writes };
    };

    /** The bare side: the same records written with applyWrites under fresh rkeys, timed; deleted after. */
    const bareOnce = async (writes: Write[]) => {
      const rkeys: string[] = [TID.nextStr()];
      for (let i = 1; i < writes.length; i++) rkeys.push(TID.nextStr(rkeys[i - 1]));
      const fresh = writes.map((w, i) => ({ ...w, rkey: rkeys[i]! }));
      settle();
      const t0 = performance.now();
      for (let i = 0; i < fresh.length; i += 200)
        await agent.com.atproto.repo.applyWrites({
          repo: alice.did,
          writes: fresh.slice(i, i + 200) as never,
        });
      const ms = performance.now() - t0;
      const deletes = fresh.map((w) => ({
        $type: 'com.atproto.repo.applyWrites#delete',
        collection: w.collection,
        rkey: w.rkey,
      }));
      for (let i = 0; i < deletes.length; i += 200)
        await agent.com.atproto.repo.applyWrites({
          repo: alice.did,
          writes: deletes.slice(i, i + 200) as never,
        });
      return ms;
    };

    // Round 0 warms the PDS's caches and gives the bare side its records; then pairs whose order alternates, so
    // the machine's load at each moment weighs on both sides alike.
    const warm = await publishOnce();
    await bareOnce(warm.writes);
    const published: number[] = [];
    const bare: number[] = [];
    let calls = warm.calls;
    // Nine pairs: over five the figure went from 1.13 to 1.41 between back-to-back runs of the same code.
    for (let pair = 0; pair < 9; pair++) {
      if (pair % 2) bare.push(await bareOnce(warm.writes));
      const p = await publishOnce();
      published.push(p.ms);
      calls = p.calls;
      if (!(pair % 2)) bare.push(await bareOnce(warm.writes));
    }
    const ratio = paired(published, bare);
    yield {
      figure: 'publish_1000_calls',
      value: calls,
      unit: 'applyWrites calls',
      target: '6 (ceil(1001/200))',
    };
    yield {
      figure: 'publish_1000',
      value: round(ratio.ratio),
      ...spreadOf(ratio),
      unit: 'ratio',
      target: '<= 1.3',
      publish_ms: round(ratio.a, 0),
      bare_ms: round(ratio.b, 0),
      // Each side from a collected heap (ADR 0086) only when Node was started with --expose-gc, as npm run bench is.
      collected_before_each_side: typeof (globalThis as { gc?: unknown }).gc === 'function',
    };
  } finally {
    await local.close();
  }
}
