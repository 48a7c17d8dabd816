import { KeyedSlots } from '../db/index.ts';

/**
 * What one MCP client may send in a turn: requests open at once (until their answer's body ends), waiting for
 * one, and in all. A server's own requests (a batch of pings in answer to anything) are each answered by a POST of
 * the client's, whose answer can hold more: unleashed, one batch opened a socket per ping, thousands at once, and
 * went on after the turn had given up on the server; answered by streams that stay open, each held a socket.
 */
export const MCP_REQUESTS = { atOnce: 8, waiting: 32, total: 500, lifetimeMs: 30 * 60_000 };

/** The reason every request of a client stops once its leash is ended. */
export class LeashEndedError extends Error {}

/**
 * `fetch` on a leash: MCP_REQUESTS at once (a request holds its place until its body is read to the end, cancelled
 * or `exchangeMs` has passed) and in all, every request cut off once `end` is called (or the total is passed, or
 * the lifetime: a client a failure left unclosed ends too).
 */
export function leashed(fetch: typeof globalThis.fetch, exchangeMs: number) {
  const ended = new AbortController();
  const end = () => ended.abort(new LeashEndedError('the MCP client was closed'));
  const lifetime = setTimeout(end, MCP_REQUESTS.lifetimeMs);
  lifetime.unref();
  ended.signal.addEventListener('abort', () => clearTimeout(lifetime), { once: true });
  const slots = new KeyedSlots(MCP_REQUESTS.atOnce, MCP_REQUESTS.waiting);
  let sent = 0;
  const leashedFetch: typeof globalThis.fetch = async (input, init) => {
    ended.signal.throwIfAborted();
    if (++sent > MCP_REQUESTS.total) end();
    ended.signal.throwIfAborted();
    const free = await slots.take('client', Date.now() + exchangeMs);
    // Held no longer than an exchange may take, nor past the leash: a body nobody reads must not keep its place.
    const onEnd = () => release();
    const release = once(() => {
      clearTimeout(timer);
      ended.signal.removeEventListener('abort', onEnd);
      free();
    });
    const timer = setTimeout(release, exchangeMs);
    timer.unref();
    ended.signal.addEventListener('abort', onEnd, { once: true });
    try {
      // Ended, or the request given up, while it waited: it never goes out (the layer below only hears a later
      // abort).
      const signal = init?.signal ? AbortSignal.any([init.signal, ended.signal]) : ended.signal;
      signal.throwIfAborted();
      const res = await fetch(input, { ...init, signal });
      // An answer with no body to read (the client reads none of a 202's) holds no place.
      if (!res.body || NO_BODY.has(res.status) || res.headers.get('content-length') === '0') {
        release();
        return res;
      }
      return untilRead(res, release);
    } catch (e) {
      release();
      throw e;
    }
  };
  return { fetch: leashedFetch, end };
}

const NO_BODY = new Set([202, 204, 205, 304]);

const once = (f: () => void) => {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      f();
    }
  };
};

/**
 * `res` with a body that calls `done` once it is read to its end, fails or is cancelled. (A stream left open past
 * the leash is closed by the outbound layer's time limit on the exchange: cancelling it here did not close its
 * socket.)
 */
function untilRead(res: Response, done: () => void): Response {
  const reader = res.body!.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { value, done: end } = await reader.read();
          if (end) {
            done();
            controller.close();
          } else controller.enqueue(value);
        } catch (e) {
          done();
          controller.error(e);
        }
      },
      cancel(reason) {
        done();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  const copy = new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  Object.defineProperty(copy, 'url', { value: res.url });
  return copy;
}
