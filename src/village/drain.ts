/**
 * A fetch whose response body keeps what it received when the connection breaks. Node's fetch errors the
 * body stream when its socket dies, and erroring a web stream discards the chunks queued in it that the
 * reader has not taken yet: a Provider's last deltas, received, then lost (reproduced: 2,000 events sent, a
 * slow reader got 1,727). Here the body is read eagerly as it arrives into a queue of our own, and the reader
 * gets every chunk that came before the error, then the error. Memory is bounded by what the Provider sent.
 */
export function drainingFetch(base: typeof fetch = globalThis.fetch): typeof fetch {
  return async (input, init) => {
    const res = await base(input, init);
    if (!res.body) return res;
    const source = res.body.getReader();
    const queue: Uint8Array[] = [];
    let ended = false;
    let failure: unknown;
    let wake: (() => void) | undefined;
    const pump = async () => {
      try {
        for (;;) {
          const { value, done } = await source.read();
          if (done) break;
          queue.push(value);
          wake?.();
        }
      } catch (e) {
        failure = e;
      } finally {
        ended = true;
        wake?.();
      }
    };
    void pump();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        while (!queue.length && !ended) {
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
        wake = undefined;
        // Everything that has arrived, at once (one pull per burst, not per chunk). Safe against loss: pull
        // runs again only when the reader has taken all of it, so the error below never discards a chunk.
        if (queue.length) for (const chunk of queue.splice(0)) controller.enqueue(chunk);
        else if (failure !== undefined) controller.error(failure);
        else controller.close();
      },
      cancel: (reason) => source.cancel(reason),
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
