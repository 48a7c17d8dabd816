// A bare pipe (turn.ts's) in a process of its own, for the instances section's floor: one JSON line in (the fake
// Provider's base URL), one out (the pipe's URL). It serves until the bench closes its stdin or kills it.
import { createInterface } from 'node:readline';
import { startBarePipe } from './turn.ts';

const lines = createInterface({ input: process.stdin });
let pipe: Awaited<ReturnType<typeof startBarePipe>> | undefined;
lines.on('line', async (line) => {
  if (pipe) return;
  const { fakeBaseURL } = JSON.parse(line) as { fakeBaseURL: string };
  pipe = await startBarePipe(fakeBaseURL);
  console.log(JSON.stringify({ url: pipe.url }));
});
lines.on('close', () => void pipe?.close().finally(() => process.exit(0)));
