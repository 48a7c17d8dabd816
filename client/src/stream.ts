import { type Frame, readFrameStream } from '../../src/parts/index.ts';
import { ApiError } from './api.ts';

/**
 * Sends a turn (or a regenerate) and hands each SSE frame to `onFrame`, parsed with the same schema the server
 * writes. Aborting `signal` is the Stop button: the server keeps what had arrived.
 */
export async function streamTurn(
  path: string,
  body: unknown,
  onFrame: (frame: Frame) => void,
  signal: AbortSignal,
): Promise<void> {
  const res = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok || !res.body) {
    const err = (await res.json().catch(() => null)) as { error?: { code: string; message: string } } | null;
    throw new ApiError(
      res.status,
      err?.error?.code ?? 'HTTP_ERROR',
      err?.error?.message ?? `The server answered ${res.status}.`,
    );
  }
  try {
    for await (const frame of readFrameStream(res.body)) onFrame(frame);
  } catch (e) {
    if (!signal.aborted) throw e;
  }
}
