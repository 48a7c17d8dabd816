import { Frame } from '../../src/parts/index.ts';
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
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
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
          if (!line.startsWith('data: ')) continue;
          const parsed = Frame.safeParse(JSON.parse(line.slice(6)));
          if (parsed.success) onFrame(parsed.data);
        }
        at = buffer.indexOf('\n\n');
      }
    }
  } catch (e) {
    if (!signal.aborted) throw e;
  }
}
