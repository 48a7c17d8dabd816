// The latency bench's load driver, in a process of its own (the measured servers must not share its event
// loop). It hosts the fake Provider too, so the time a delta leaves the Provider and the time it reaches the
// client are read on one monotonic clock. Each delta's text is `[i:t]`: its index and the time it was sent.
// Protocol: one JSON command per stdin line, one JSON answer per stdout line.
import http from 'node:http';
import { createInterface } from 'node:readline';
import { startFakeProvider } from '../../test/support/fakeProvider.ts';

export interface Phase {
  /** The server's turn route, or the bare pipe. */
  target: 'server' | 'pipe';
  /** One request each, all at once. For the server, one Conversation each. */
  urls: string[];
  /** The session cookie of each request (the server's Players: one per Conversation, as real load is). */
  cookies?: string[];
  deltas: number;
  paceMs: number;
  /**
   * Turns each URL takes back to back, the next sent as soon as the reply before it ends (a Player who answers at
   * once): 1 unless given. Load with no moment where every turn waits on the slowest.
   */
  turnsEach?: number;
  /** Stop each odd-numbered reply after its stream has shown this many deltas (the Player pressing Stop). */
  stopAfter?: number;
}
export interface PhaseResult {
  /** Added delay of every delta (arrival − sent), ms. */
  delays: number[];
  /** Request sent → start frame (server) or first byte (pipe), ms. */
  starts: number[];
  /** Deltas missing or out of order in streams that were not stopped. */
  lost: number;
  errors: string[];
  stopped: { messageId: string; seen: number[] }[];
}

const now = () => performance.timeOrigin + performance.now();
const TOKEN = /\[(\d+):(\d+(?:\.\d+)?)\]/g;
// Kept-alive connections, warmed by the phases before: a cold burst would measure the accept queue (both
// sides alike), not the servers.
// A free socket idle for 4 s is dropped: servers close idle keep-alive connections after 5 s, and reusing one
// they just closed fails the request ("socket hang up").
const agent = new http.Agent({ keepAlive: true, maxSockets: 1024, timeout: 4000 });
const fake = await startFakeProvider();

async function stream(
  phase: Phase,
  url: string,
  cookie: string | undefined,
  stop: boolean,
): Promise<{
  delays: number[];
  start: number;
  seen: number[];
  messageId: string | null;
  error?: string;
}> {
  let stopped = false;
  const t0 = now();
  const delays: number[] = [];
  const seen: number[] = [];
  let start = Number.NaN;
  let messageId: string | null = null;
  let finished = phase.target === 'pipe';
  const body = JSON.stringify({ text: 'Go on.' });
  const error = await new Promise<string | undefined>((resolve) => {
    const req = http.request(url, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'x-agentsville': '1',
        ...(cookie ? { cookie } : {}),
      },
    });
    req.on('error', (e) => resolve(stopped ? undefined : String(e)));
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        let text = '';
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve(`${res.statusCode} ${text.slice(0, 200)}`));
        return;
      }
      res.setEncoding('utf8');
      let buffered = '';
      res.on('data', (chunk: string) => {
        const at = now();
        if (Number.isNaN(start) && phase.target === 'pipe') start = at - t0;
        buffered += chunk;
        const end = buffered.lastIndexOf('\n\n');
        if (end < 0) return;
        const complete = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (phase.target === 'server') {
          if (Number.isNaN(start) && complete.includes('"type":"start"')) {
            start = at - t0;
            messageId = /"messageId":"([^"]+)"/.exec(complete)?.[1] ?? null;
          }
          if (complete.includes('"type":"finish"')) finished = true;
        }
        for (const m of complete.matchAll(TOKEN)) {
          seen.push(Number(m[1]));
          delays.push(at - Number(m[2]));
        }
        if (stop && !stopped && seen.length >= (phase.stopAfter ?? Number.POSITIVE_INFINITY)) {
          // The Player presses Stop (its own request, ADR 0037) and reads on to the reply's end.
          stopped = true;
          if (phase.target === 'server' && messageId) {
            const stopUrl = url.replace(/\/messages$/, `/messages/${messageId}/stop`);
            const s = http.request(stopUrl, {
              method: 'POST',
              agent,
              headers: { 'x-agentsville': '1', ...(cookie ? { cookie } : {}) },
            });
            s.on('response', (r) => r.resume());
            s.on('error', () => {});
            s.end();
          } else {
            req.destroy();
            resolve(undefined);
          }
        }
      });
      res.on('end', () => resolve(undefined));
      res.on('error', (e) => resolve(stopped ? undefined : String(e)));
    });
    req.end(body);
  });
  if (error) return { delays, start, seen, messageId, error };
  if (!stop && !finished) return { delays, start, seen, messageId, error: 'no finish frame' };
  return { delays, start, seen, messageId };
}

async function run(phase: Phase): Promise<PhaseResult> {
  const each = phase.turnsEach ?? 1;
  for (let n = 0; n < phase.urls.length * each; n++) {
    fake.enqueue(async (r) => {
      for (let i = 0; i < phase.deltas; i++) {
        if (r.clientGone) return;
        r.text(`[${i}:${now().toFixed(3)}]`);
        await r.wait(phase.paceMs);
      }
      r.finish('stop', { prompt_tokens: 10, completion_tokens: phase.deltas });
    });
  }
  const results = await Promise.all(
    phase.urls.map(async (url, n) => {
      const turns = [];
      for (let k = 0; k < each; k++)
        turns.push(await stream(phase, url, phase.cookies?.[n], !!phase.stopAfter && n % 2 === 1));
      return turns.map((r) => ({ r, n }));
    }),
  );
  const out: PhaseResult = { delays: [], starts: [], lost: 0, errors: [], stopped: [] };
  results.flat().forEach(({ r, n }) => {
    if (r.error) out.errors.push(r.error);
    out.delays.push(...r.delays);
    if (!Number.isNaN(r.start)) out.starts.push(r.start);
    if (phase.stopAfter && n % 2 === 1) {
      if (r.messageId) out.stopped.push({ messageId: r.messageId, seen: r.seen });
      return;
    }
    // Every delta, once, in order.
    const inOrder = r.seen.filter((v, i) => v === i).length;
    out.lost += phase.deltas - inOrder;
  });
  return out;
}

process.stdout.write(`${JSON.stringify({ fakeBaseURL: fake.baseURL })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  const phase = JSON.parse(line) as Phase;
  process.stdout.write(`${JSON.stringify(await run(phase))}\n`);
}
await fake.close();
