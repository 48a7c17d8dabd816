// CPU profiles of the 200-stream phases of the latency section, the server's and the bare pipe's apart, taken
// in-process (inspector) around the phases only, so setup (sign-ins, the warm-up) is not in them:
//   PROFILE_DIR=/tmp/prof node --import tsx scripts/bench/profileStreams.ts
// writes server.cpuprofile and pipe.cpuprofile (open in Chrome DevTools) and prints each side's CPU per delta.
// N streams (200), REPS phases per side (3), DELTAS deltas (100) every 20 ms as the latency section sends them;
// N=10 DELTAS=20 profiles the start-frame phase; N=80 DELTAS=40 PACE=0 the instances section's load.
import { mkdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../src/log/index.ts';
import { startTestApp } from '../test/support/app.ts';
import { startDriver } from './bench/latency.ts';
import { startBarePipe } from './bench/turn.ts';

const N = Number(process.env.N ?? 200);
const REPS = Number(process.env.REPS ?? 3);
const DELTAS = Number(process.env.DELTAS ?? 100);
/** Milliseconds between deltas (20, as the latency section sends them); 0 sends them as fast as it can. */
const PACE = Number(process.env.PACE ?? 20);
const dir = process.env.PROFILE_DIR ?? path.join(os.tmpdir(), 'av-profile-streams');
const driver = await startDriver();
const app = await startTestApp(
  { checkpointMs: 250 },
  { COMPATIBLE_PROVIDERS: JSON.stringify([{ id: 'fake', baseURL: driver.fakeBaseURL, apiKey: 'bench' }]) },
  {
    adminDatabaseUrl: process.env.TEST_DATABASE_URL ?? process.env.BENCH_DATABASE_URL,
    logger: createLogger({ level: 'error', format: 'pretty' }),
  },
);
const pipe = await startBarePipe(driver.fakeBaseURL);
try {
  await app.db.sql`update village_settings set turns_per_minute = 10000, concurrent_streams = 1000,
    player_daily_tokens = 1000000000000, village_daily_tokens = 1000000000000, max_conversations = 1000000`;
  const conversations: string[] = [];
  const cookies: string[] = [];
  for (let i = 0; i < N; i++) {
    const { cookie } = await app.signIn();
    const npc = (await (await app.api('/api/npcs', { cookie, body: { name: 'Bench' } })).json()) as {
      npc: { id: string };
    };
    const res = await app.api('/api/conversations', { cookie, body: { npcIds: [npc.npc.id] } });
    conversations.push(((await res.json()) as { conversation: { id: string } }).conversation.id);
    cookies.push(cookie);
  }
  const phase = (target: 'server' | 'pipe') => ({
    target,
    urls:
      target === 'server'
        ? conversations.map((id) => `${app.url}/api/conversations/${id}/messages`)
        : conversations.map(() => pipe.url),
    cookies,
    deltas: DELTAS,
    paceMs: PACE,
  });
  const H = Number(process.env.HISTORY ?? 0);
  for (const id of conversations) {
    const [p] = await app.db.sql`select c.player_id, cp.npc_id from conversations c join conversation_participants cp on cp.conversation_id = c.id where c.id = ${id}`;
    for (let t = 0; t < H; t++) {
      await app.db.sql`insert into messages (conversation_id, role, text, parts, status) values (${id}, 'player', 'Go on.', ${app.db.sql.json([{ type: 'text', text: 'Go on.' }])}, 'complete')`;
      const text = Array.from({ length: 40 }, (_, i) => `[${i}:${(12345.678 + i).toFixed(3)}]`).join('');
      await app.db.sql`insert into messages (conversation_id, role, npc_id, npc_name, text, parts, status) values (${id}, 'npc', ${p!.npc_id}, 'Bench', ${text}, ${app.db.sql.json([{ type: 'text', text }])}, 'complete')`;
    }
  }
  await driver.run(phase('server'));
  await driver.run(phase('pipe'));
  await mkdir(dir, { recursive: true });
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  for (const target of ['server'] as const) {
    await session.post('Profiler.start');
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < REPS; i++) await driver.run(phase(target));
    const used = process.cpuUsage(cpu0);
    const { profile } = await session.post('Profiler.stop');
    await writeFile(path.join(dir, `${target}.cpuprofile`), JSON.stringify(profile));
    const perDelta = (used.user + used.system) / (REPS * N * DELTAS);
    console.log(JSON.stringify({ side: target, cpu_per_delta_us: Number(perDelta.toFixed(1)), dir }));
  }
  session.disconnect();
} finally {
  await pipe.close();
  await app.close();
  driver.close();
}
