import { type Frame, readFrameStream } from '../../src/parts/index.ts';

/** Reads an SSE response as frames, with the same reader the browser uses. */
export function readFrames(res: Response): AsyncGenerator<Frame> {
  return readFrameStream(res.body!);
}

export async function collectFrames(res: Response): Promise<Frame[]> {
  const frames: Frame[] = [];
  for await (const f of readFrames(res)) frames.push(f);
  return frames;
}
