import { Frame } from '../../src/parts/index.ts';

/** Reads an SSE response as frames, parsed with the same schema the browser uses. */
export async function* readFrames(res: Response): AsyncGenerator<Frame> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let at = buffer.indexOf('\n\n');
      while (at >= 0) {
        const event = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        for (const line of event.split('\n')) {
          if (line.startsWith('data: ')) yield Frame.parse(JSON.parse(line.slice(6)));
        }
        at = buffer.indexOf('\n\n');
      }
    }
  } finally {
    reader.releaseLock();
  }
}

export async function collectFrames(res: Response): Promise<Frame[]> {
  const frames: Frame[] = [];
  for await (const f of readFrames(res)) frames.push(f);
  return frames;
}
