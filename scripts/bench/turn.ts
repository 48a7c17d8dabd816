import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { streamText } from 'ai';
import { startTestApp, type TestApp } from '../../test/support/app.ts';
import type { Figure } from '../bench.ts';
import { startFakeHost } from './fakeHost.ts';
import { mean, round, sideBySide, spreadOf } from './stats.ts';

const DELTAS = 2000;

async function newConversation(app: TestApp, cookie: string): Promise<string> {
  const npc = (await (await app.api('/api/npcs', { cookie, body: { name: 'Bench' } })).json()) as {
    npc: { id: string };
  };
  const c = (await (
    await app.api('/api/conversations', { cookie, body: { npcIds: [npc.npc.id] } })
  ).json()) as {
    conversation: { id: string };
  };
  return c.conversation.id;
}

async function turn(app: TestApp, cookie: string, conversationId: string): Promise<void> {
  const res = await app.api(`/api/conversations/${conversationId}/messages`, {
    cookie,
    body: { text: 'Go on.' },
  });
  const body = await res.text();
  if (res.status !== 200 || !body.includes('"type":"finish"'))
    throw new Error(`turn failed: ${res.status} ${body.slice(0, 300)}`);
}

/** A bare streamText -> SSE pipe over the same fake Provider: the floor a turn's overhead is measured against. */
export async function startBarePipe(baseURL: string) {
  const model = createOpenAICompatible({ name: 'fake', baseURL, includeUsage: true })('fake-model');
  const server = http.createServer(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const result = streamText({ model, prompt: 'Go on.' });
    for await (const part of result.stream) {
      if (part.type === 'text-delta') res.write(`data: ${JSON.stringify(part)}\n\n`);
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    url,
    async request() {
      const res = await fetch(url, { method: 'POST' });
      await res.text();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function* turnFigures(adminDatabaseUrl: string): AsyncGenerator<Figure> {
  let statements: string[] | undefined;
  const fake = await startFakeHost();
  const app = await startTestApp(
    { checkpointMs: 250 },
    { COMPATIBLE_PROVIDERS: JSON.stringify([{ id: 'fake', baseURL: fake.baseURL, apiKey: 'bench' }]) },
    {
      adminDatabaseUrl,
      onQuery: (q) => statements?.push(q),
    },
  ).catch((e) => {
    // A server that did not start leaves no fake Provider behind it either.
    fake.close();
    throw e;
  });
  try {
    // One Player sends thousands of turns here: the Village's spending limits would (rightly) stop them.
    await app.db.sql`update village_settings set turns_per_minute = 10000, concurrent_streams = 1000,
      player_daily_tokens = 1000000000000, village_daily_tokens = 1000000000000, max_conversations = 1000000`;
    const { cookie } = await app.signIn();

    // turn_overhead
    const bare = await startBarePipe(fake.baseURL);
    await fake.answerWith('burst', DELTAS);
    const conversations: string[] = [];
    for (let i = 0; i < 60; i++) conversations.push(await newConversation(app, cookie));
    const overhead = await sideBySide(
      30,
      5,
      () => turn(app, cookie, conversations.pop()!),
      () => bare.request(),
    );
    await bare.close();
    yield {
      figure: 'turn_overhead',
      value: round(overhead.ratio),
      unit: 'ratio',
      target: '<= 1.10',
      ...spreadOf(overhead),
      turn_ms: round(overhead.a, 1),
      bare_ms: round(overhead.b, 1),
      deltas: DELTAS,
    };

    // history_growth: consecutive turns of a long Conversation against a short one, the median of the pairs'
    // ratios, as the issue asks (a ratio of means moved by 0.4 between runs with one slow turn: one turn here
    // takes 27-188 ms on a busy 2-core machine). The long one starts ten turns short of its window overflowing,
    // so one of the measured turns folds the oldest turns into the summary (a blocking summary call), down to
    // three quarters of the budget; the ratio of means, which counts that turn, is printed beside it, and the
    // folding turn is measured on its own below (fold_turn_ratio).
    const small = await seeded(app, cookie, 10);
    const big = await seeded(app, cookie, 10_000, 231);
    await fake.answerWith('burst', 200);
    const summariesBefore = await fake.summaries();
    const growth = await sideBySide(
      21,
      3,
      () => turn(app, cookie, big.id),
      () => turn(app, cookie, small.id),
      { b: small.reset },
    );
    const summaryCalls = (await fake.summaries()) - summariesBefore;
    if (summaryCalls < 1) throw new Error('history_growth: no turn folded into the summary');

    // The turn that folds, alone: each run starts just past the window's edge (reset before it, untimed), medians.
    const edge = await seeded(app, cookie, 10_000, 240);
    const foldsBefore = await fake.summaries();
    const fold = await sideBySide(
      9,
      2,
      () => turn(app, cookie, edge.id),
      () => turn(app, cookie, small.id),
      { a: edge.reset, b: small.reset },
    );
    const folds = (await fake.summaries()) - foldsBefore;
    if (folds < 11) throw new Error(`history_growth: only ${folds} summary calls in 11 folding turns`);
    yield {
      figure: 'history_growth',
      value: round(growth.ratio),
      unit: 'ratio',
      target: '<= 1.2',
      ...spreadOf(growth),
      turn_10000_median_ms: round(growth.a, 1),
      turn_10_median_ms: round(growth.b, 1),
      ratio_of_means: round(mean(growth.times.a) / mean(growth.times.b)),
      summary_calls: summaryCalls,
      fold_turn_ms: round(fold.a, 1),
      fold_turn_ratio: round(fold.ratio),
    };

    // writes_per_reply: the fewest of three replies. The instance's 30-s sweep and its pollers write too, and
    // their statements land in one reply's window now and then (six of them made 16 read as 22).
    await fake.answerWith('paced', DELTAS);
    const replies: { counted: string[]; ms: number }[] = [];
    for (let i = 0; i < 3; i++) {
      const id = await newConversation(app, cookie);
      statements = [];
      const t0 = performance.now();
      await turn(app, cookie, id);
      replies.push({ counted: statements, ms: performance.now() - t0 });
      statements = undefined;
    }
    const { counted, ms } = replies.reduce((a, b) => (b.counted.length < a.counted.length ? b : a));
    const checkpoints = counted.filter(
      (q) => /^update messages m set parts/.test(q.trim()) && /status = 'streaming'/.test(q),
    ).length;
    yield {
      figure: 'writes_per_reply',
      value: counted.length,
      unit: 'statements',
      target: 'a constant plus the checkpoints',
      checkpoints,
      constant: counted.length - checkpoints,
      deltas: DELTAS,
      reply_ms: round(ms, 0),
      counts_of_three: replies.map((r) => r.counted.length),
    };
  } finally {
    await app.close();
    fake.close();
  }
}

/**
 * A Conversation with `n` prior Messages of about 1,000 characters (about 253 tokens each). A long one has its
 * rolling summary caught up to just before its last `tail` Messages: 240 overflow the 60,000-token window by a
 * few, so the next turn folds; 231 leave room for about ten turns. `reset` puts it back.
 */
async function seeded(app: TestApp, cookie: string, n: number, tail = 240) {
  const id = await newConversation(app, cookie);
  const sql = app.db.sql;
  await sql`
    insert into messages (conversation_id, role, npc_name, parts, text)
    select ${id}, case when i % 2 = 0 then 'player' else 'npc' end, case when i % 2 = 0 then null else 'Bench' end,
      jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'message ' || i || ' ' || repeat('lorem ipsum ', 83))),
      'message ' || i || ' ' || repeat('lorem ipsum ', 83)
    from generate_series(1, ${n}) i`;
  const [{ max }] =
    (await sql`select max(seq)::text as max from messages where conversation_id = ${id}`) as unknown as [
      { max: string },
    ];
  const through = n > tail ? (BigInt(max) - BigInt(tail)).toString() : '0';
  const summary = n > tail ? 'Earlier: many things were said.' : '';
  const restore = () =>
    sql`update conversations set summary = ${summary}, summary_through = ${through} where id = ${id}`;
  await restore();
  return {
    id,
    reset: async () => {
      await sql`delete from messages where conversation_id = ${id} and seq > ${max}`;
      await restore();
    },
  };
}
