// CPU per delta of the server's own per-delta code (the reply reducer, the hub, SSE merging and serialising),
// without the AI SDK's streams or sockets: `node --import tsx scripts/bench/deltaPath.ts [tree]`. Given another
// checkout's root (git archive of an older commit), it measures that one: how a change to the path is judged on
// a shared machine, where wall time is noise. 200 replies of 2,000 deltas, frames merged as under load.
import path from 'node:path';

const root = process.argv[2] ?? path.resolve(import.meta.dirname, '../..');
const { newReply, reduceReply } = await import(`${root}/src/turn/reply.ts`);
const { ReplyHub } = await import(`${root}/src/replies/hub.ts`);
const { mergeFrames } = await import(`${root}/src/parts/index.ts`);
const { SseWriter } = await import(`${root}/src/http/sse.ts`);
const DELTAS = 2000,
  REPLIES = 200;
let written = 0;
// A response that is always busy (writableLength > 0), so frames queue and merge as they do under load,
// and flush on setImmediate; here flushed by hand every 10 deltas.
const res = {
  writableLength: 1,
  writableEnded: false,
  write: (s: string) => {
    written += s.length;
    return true;
  },
  status() {},
  set() {},
  flushHeaders() {},
};
function run() {
  const hub = new ReplyHub();
  for (let r = 0; r < REPLIES; r++) {
    const state = newReply(`m${r}`, { provider: 'p', model: 'm' }, 30000);
    hub.begin(
      {
        type: 'start',
        messageId: state.messageId,
        playerMessageId: 'x',
        npc: { id: 'n', name: 'N' },
        provider: 'p',
        model: 'm',
      },
      () => state.parts,
      () => {},
    );
    const sse = new SseWriter(res as never, mergeFrames);
    (sse as unknown as { scheduled: boolean }).scheduled = true;
    const emit = (f: unknown) => {
      sse.send(f as never);
      hub.publish(f as never);
    };
    for (let i = 0; i < DELTAS; i++) {
      reduceReply(state, { type: 'text-delta', id: '0', text: `[${i}:1234.567]` } as never, emit);
      if (i % 10 === 9) {
        (sse as unknown as { scheduled: boolean }).scheduled = false;
        sse.flush();
        (sse as unknown as { scheduled: boolean }).scheduled = true;
      }
    }
    hub.end(state.messageId);
  }
}
for (let i = 0; i < 3; i++) run();
const times: number[] = [];
for (let i = 0; i < 7; i++) {
  const c0 = process.cpuUsage();
  run();
  const u = process.cpuUsage(c0);
  times.push(((u.user + u.system) * 1000) / (DELTAS * REPLIES));
}
times.sort((a, b) => a - b);
console.log(
  root,
  'CPU ns per delta (median of 7):',
  times[3]!.toFixed(0),
  'range',
  times[0]!.toFixed(0),
  times[6]!.toFixed(0),
  'written',
  written,
);
