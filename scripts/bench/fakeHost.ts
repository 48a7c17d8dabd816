// The turn section's fake Provider, in a process of its own as the latency section's is (loadDriver.ts): reading,
// parsing and recording each request body — some 250 KB for each turn of the long Conversation — is the
// Provider's work, and in the bench's own process it was counted as the server's. One JSON line in, one out:
// {"script":"burst"|"paced","n":N} answers every streaming request from then on with that script;
// {"summaries":true} tells how many non-streaming (summary) calls came so far; {"last":true} answers the last
// streaming request's messages (what the server sent, so a bare pipe can send the same).
import { createInterface } from 'node:readline';
import { type Script, startFakeProvider } from '../../test/support/fakeProvider.ts';
import { jsonLineChild } from './jsonLineChild.ts';

/** `n` deltas as fast as the socket takes them. */
const burst =
  (n: number): Script =>
  (r) => {
    for (let i = 0; i < n; i++) r.text(`t${i % 10} `);
    r.finish('stop', { prompt_tokens: 10, completion_tokens: n });
  };

/** The same, paced over about a second, as a real Provider streams. */
const paced =
  (n: number): Script =>
  async (r) => {
    for (let i = 0; i < n; i++) {
      r.text(`t${i % 10} `);
      if (i % 4 === 3) await r.wait(1);
    }
    r.finish('stop', { prompt_tokens: 10, completion_tokens: n });
  };

type Ask = { script: 'burst' | 'paced'; n: number } | { summaries: true } | { last: true };

/** A chat request's messages as the OpenAI wire has them (text only, as the bench's turns are). */
export type WireMessage = { role: string; content: unknown };

/** Starts the host as a child process; its Provider is at `baseURL`. */
export async function startFakeHost() {
  const child = jsonLineChild(import.meta.filename);
  const { baseURL } = await child.next<{ baseURL: string }>();
  return {
    baseURL,
    /** Every streaming request from now on is answered with this script. */
    answerWith: async (script: 'burst' | 'paced', n: number) => {
      await child.ask({ script, n } satisfies Ask);
    },
    summaries: async () =>
      (await child.ask<{ summaries: number }>({ summaries: true } satisfies Ask)).summaries,
    /** The messages of the last streaming request, as sent. */
    lastMessages: async () =>
      (await child.ask<{ messages: WireMessage[] }>({ last: true } satisfies Ask)).messages,
    close: child.close,
  };
}

if (import.meta.filename === process.argv[1]) {
  const fake = await startFakeProvider();
  process.stdout.write(`${JSON.stringify({ baseURL: fake.baseURL })}\n`);
  let summaries = 0;
  for await (const line of createInterface({ input: process.stdin })) {
    const a = JSON.parse(line) as Ask;
    if ('last' in a) {
      const last = fake.requests.findLast((r) => r.body.stream);
      // The streaming bodies let go once read (some 250 KB each); the summary calls stay to be counted.
      const kept = fake.requests.filter((r) => !r.body.stream);
      fake.requests.length = 0;
      fake.requests.push(...kept);
      process.stdout.write(`${JSON.stringify({ messages: last?.body.messages ?? [] })}\n`);
    } else if ('summaries' in a) {
      // Counted, then let go: the bodies are not kept for the whole run.
      summaries += fake.requests.filter((r) => !r.body.stream).length;
      fake.requests.length = 0;
      process.stdout.write(`${JSON.stringify({ summaries })}\n`);
    } else {
      const script = (a.script === 'burst' ? burst : paced)(a.n);
      fake.route = () => script;
      process.stdout.write('{"ok":true}\n');
    }
  }
  await fake.close();
}
