/**
 * A fetch whose response body keeps what it received when the connection breaks. Node's fetch errors the
 * body stream when its socket dies, and erroring a web stream discards the chunks queued in it that the
 * reader has not taken yet: a Provider's last deltas, received, then lost (reproduced: 2,000 events sent, a
 * slow reader got 1,727). Here the body is read eagerly as it arrives into a stream of our own, and its error is
 * passed on only once the reader has taken every chunk that came before it. Memory is bounded by what the
 * Provider sent.
 */
export function drainingFetch(base: typeof fetch = globalThis.fetch): typeof fetch {
  return async (input, init) => {
    const res = await base(input, init);
    if (!res.body) return res;
    const source = res.body.getReader();
    let failure: { error: unknown } | undefined;
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>(
      {
        start(controller) {
          // Each chunk straight into this stream's queue (or to the read waiting for it): no queue or promise
          // of our own per chunk, on a path every delta of every reply takes.
          void (async () => {
            try {
              for (;;) {
                const { value, done } = await source.read();
                if (cancelled) return;
                if (done) return controller.close(); // a close, unlike an error, keeps what is queued
                controller.enqueue(value);
              }
            } catch (error) {
              if (cancelled) return;
              // Nothing queued (a high-water mark of 0: desiredSize is minus the chunks queued): nothing lost.
              if (controller.desiredSize === 0) controller.error(error);
              else failure = { error };
            }
          })();
        },
        // Called when a read waits on an empty queue: every chunk before the error has been taken.
        pull(controller) {
          if (failure) controller.error(failure.error);
        },
        cancel(reason) {
          cancelled = true;
          return source.cancel(reason);
        },
      },
      { highWaterMark: 0 },
    );
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
