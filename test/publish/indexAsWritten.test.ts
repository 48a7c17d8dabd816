import { afterAll, beforeAll, expect, it } from 'vitest';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';

// A publish indexes each batch the PDS has taken while the next is written (the write-through overlaps the
// PDS's time), so what reached the PDS is readable here even if the publish stops part-way. The event stream
// would index the same records: this app follows no stream (a relay that is not there), so whatever is in the
// index came from the publish itself.

/** Holds the first applyWrites after one that succeeded, until released. */
const hold = { fired: 0, ok: 0, release: null as null | (() => void) };
const holding: typeof fetch = async (input, init) => {
  const req = new Request(input, init);
  if (!req.url.includes('com.atproto.repo.applyWrites')) return fetch(req);
  if (hold.ok >= 1 && !hold.fired) {
    hold.fired++;
    await new Promise<void>((r) => {
      hold.release = r;
    });
  }
  const res = await fetch(req);
  if (res.ok) hold.ok++;
  return res;
};

let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };

beforeAll(async () => {
  local = await startLocalApp({ oauthFetch: holding, env: { INDEXER_RELAY_URL: 'ws://127.0.0.1:9' } });
  alice = await local.signInAs('alice.test');
}, 120_000);
afterAll(() => local?.close());

const indexedCount = async () => {
  const [row] = await local.app.db.sql<{ n: number }[]>`select
    (select count(*) from index_messages where did = ${alice.did})
    + (select count(*) from index_sessions where did = ${alice.did}) as n`;
  return Number(row!.n);
};

it('each batch the PDS took is in the index while the next is still being written', async () => {
  const sql = local.app.db.sql;
  const [npc] = await sql`insert into npcs (player_id, name) values (${alice.playerId}, 'Ada') returning id`;
  const [c] =
    await sql`insert into conversations (player_id, title) values (${alice.playerId}, 'Long') returning id`;
  await sql`insert into conversation_participants values (${c!.id}, ${npc!.id}, 0)`;
  // 250 turns and the session: two batches of at most 200 writes.
  await sql`insert into messages (conversation_id, role, npc_id, npc_name, parts, text, provider, model)
    select ${c!.id}, case when i % 2 = 0 then 'player' else 'npc' end,
      case when i % 2 = 0 then null else ${npc!.id}::uuid end, case when i % 2 = 0 then null else 'Ada' end,
      jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'Turn ' || i)), 'Turn ' || i, 'fake', 'fake-model'
    from generate_series(1, 250) i`;
  const put = local.app.api(`/api/conversations/${c!.id}/publication`, {
    method: 'PUT',
    body: {},
    cookie: alice.cookie,
  });
  for (let i = 0; i < 400 && !hold.release; i++) await new Promise((r) => setTimeout(r, 25));
  expect(hold.fired).toBe(1);
  // The first batch, as the store marks it written: it must reach the index before the second is let go.
  const [first] = await sql<{ n: number }[]>`select count(*)::int as n from publication_records
    where conversation_id = ${c!.id} and pending is null and cid is not null`;
  expect(first!.n).toBe(200);
  let seen = 0;
  for (let i = 0; i < 400 && seen < first!.n; i++) {
    seen = await indexedCount();
    if (seen < first!.n) await new Promise((r) => setTimeout(r, 25));
  }
  expect(seen).toBe(200);
  hold.release!();
  const res = await put;
  expect(res.status).toBe(200);
  expect(await indexedCount()).toBe(251);
  const { uri } = (await res.json()) as { uri: string };
  expect(await sql`select 1 from index_sessions where uri = ${uri}`).toHaveLength(1);
}, 120_000);
