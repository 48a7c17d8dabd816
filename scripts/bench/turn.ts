import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { type ModelMessage, streamText } from 'ai';
import { startTestApp, type TestApp } from '../../test/support/app.ts';
import type { Figure } from '../bench.ts';
import { startFakeHost, type WireMessage } from './fakeHost.ts';
import { mean, median, paired, round, sideBySide, spreadOf } from './stats.ts';

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

/**
 * A bare streamText -> SSE pipe over the same fake Provider: the floor a turn's overhead is measured against.
 * `request(messages)` sends those messages (as the Provider received them from the server) instead of one line.
 */
export async function startBarePipe(baseURL: string) {
  const model = createOpenAICompatible({ name: 'fake', baseURL, includeUsage: true })('fake-model');
  let messages: ModelMessage[] | undefined;
  let failure: unknown;
  const server = http.createServer(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // The Provider's messages as received: the instructions among them, as system messages, where they were.
    const result = streamText({
      model,
      ...(messages ? { messages, allowSystemInMessages: true } : { prompt: 'Go on.' }),
    });
    for await (const part of result.stream) {
      if (part.type === 'text-delta') res.write(`data: ${JSON.stringify(part)}\n\n`);
      // A floor that failed would measure nothing: the figure stops instead.
      if (part.type === 'error') failure = part.error;
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    url,
    async request(prompt?: WireMessage[]) {
      // Text messages only, as the bench's turns send: the wire's roles and string contents are ModelMessages.
      messages = prompt as ModelMessage[] | undefined;
      failure = undefined;
      const res = await fetch(url, { method: 'POST' });
      await res.text();
      if (failure) throw new Error(`the bare pipe failed: ${String(failure)}`);
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

    yield await historyGrowth(app, cookie, fake);

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

type FakeHost = Awaited<ReturnType<typeof startFakeHost>>;

/**
 * history_growth: consecutive turns of a long Conversation against a short one, in alternating pairs; then, in a
 * block of their own, a bare streamText pipe sending the very messages the Provider received for each of those
 * turns, alternately. The figure is the median of the pairs' long turn ÷ (short turn + what the longer prompt
 * adds to the bare pipe, median against median): how much more than the short turn a long one costs beyond
 * sending its prompt, which any client pays (the SDK's JSON of some 250 KB, its transfer, the Provider reading
 * it: ADR 0085). The bare runs come after the turns, not each beside its own, so that none pays for what a long
 * turn left behind (its garbage, its writes). The plain ratio and the excess in milliseconds are printed beside.
 * The long one starts ten turns short of its window overflowing, so one of the measured turns folds the oldest
 * turns into the summary (a blocking summary call), down to three quarters of the budget; the ratio of means,
 * which counts that turn, is printed too, and the folding turn is measured on its own (fold_turn_ratio).
 */
async function historyGrowth(app: TestApp, cookie: string, fake: FakeHost): Promise<Figure> {
  const small = await seeded(app, cookie, 10);
  const big = await seeded(app, cookie, 10_000, 231);
  await fake.answerWith('burst', 200);
  const summariesBefore = await fake.summaries();
  const t = {
    big: [] as number[],
    small: [] as number[],
    bareBig: [] as number[],
    bareSmall: [] as number[],
  };
  const prompts = { big: [] as WireMessage[][], small: [] as WireMessage[][] };
  const timed = async (fn: () => Promise<void>) => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const WARMUP = 3;
  const PAIRS = 21;
  const sides = (i: number) => (i % 2 ? (['big', 'small'] as const) : (['small', 'big'] as const));
  for (let i = 0; i < WARMUP + PAIRS; i++) {
    for (const which of sides(i)) {
      if (which === 'small') await small.reset();
      const ms = await timed(() => turn(app, cookie, (which === 'big' ? big : small).id));
      const prompt = await fake.lastMessages();
      if (i < WARMUP) continue;
      t[which].push(ms);
      prompts[which].push(prompt);
    }
  }
  const bare = await startBarePipe(fake.baseURL);
  try {
    for (let i = 0; i < WARMUP + PAIRS; i++) {
      for (const which of sides(i)) {
        const ms = await timed(() => bare.request(prompts[which][Math.max(i - WARMUP, 0)]));
        if (i >= WARMUP) t[which === 'big' ? 'bareBig' : 'bareSmall'].push(ms);
      }
    }
  } finally {
    await bare.close();
  }
  const summaryCalls = (await fake.summaries()) - summariesBefore;
  if (summaryCalls < 1) throw new Error('history_growth: no turn folded into the summary');
  const floorGrowth = median(t.bareBig) - median(t.bareSmall);
  const growth = paired(
    t.big,
    t.small.map((s) => s + floorGrowth),
  );
  const plain = paired(t.big, t.small);

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
  return {
    figure: 'history_growth',
    value: round(growth.ratio),
    unit: 'ratio',
    target: '<= 1.2',
    ...spreadOf(growth),
    turn_10000_median_ms: round(plain.a, 1),
    turn_10_median_ms: round(plain.b, 1),
    // What a long turn costs beyond a short one and beyond its prompt's floor.
    excess_ms: round(plain.a - plain.b - floorGrowth, 1),
    // The same turns without the floor's growth taken out: the Provider's and the SDK's share of the long turn.
    plain_ratio: round(plain.ratio),
    plain_spread: plain.spread,
    bare_long_prompt_ms: round(median(t.bareBig), 1),
    bare_short_prompt_ms: round(median(t.bareSmall), 1),
    ratio_of_means: round(mean(t.big) / mean(t.small)),
    summary_calls: summaryCalls,
    fold_turn_ms: round(fold.a, 1),
    fold_turn_ratio: round(fold.ratio),
  };
}
