import { type Frame, readFrameStream } from '../../src/parts/index.ts';
import { reach, refusalOf } from './api.ts';

/**
 * Sends a turn (or a regenerate), or with GET follows a reply already being written, and hands each SSE frame to
 * `onFrame`, parsed with the same schema the server writes. Aborting `signal` only stops reading: the reply goes
 * on (Stop is its own request).
 */
export async function streamTurn(
  path: string,
  body: unknown,
  onFrame: (frame: Frame) => void,
  signal: AbortSignal,
  method: 'GET' | 'POST' = 'POST',
  /** Told once the server has accepted the turn (its stream opened): nothing before that is stored. */
  onAccepted?: () => void,
): Promise<void> {
  const res = await reach(
    path,
    method === 'GET'
      ? { signal }
      : { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal },
  );
  if (!res.ok || !res.body) {
    throw await refusalOf(res);
  }
  onAccepted?.();
  try {
    for await (const frame of readFrameStream(res.body)) onFrame(frame);
  } catch (e) {
    if (!signal.aborted) throw e;
  }
}
