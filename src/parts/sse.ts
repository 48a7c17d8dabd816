import { Frame } from './frames.ts';

/**
 * Reads SSE text as frames, parsed with the frame schema: the browser and the tests read a turn's stream
 * with this one function. Frames that do not parse are skipped, as an unknown Part type is.
 */
export async function* readFrameStream(body: ReadableStream<Uint8Array<ArrayBuffer>>): AsyncGenerator<Frame> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
        const event = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        for (const line of event.split('\n')) {
          if (!line.startsWith('data: ')) continue;
          const parsed = Frame.safeParse(JSON.parse(line.slice(6)));
          if (parsed.success) yield parsed.data;
        }
      }
    }
  } finally {
    reader.releaseLock();
  }
}
