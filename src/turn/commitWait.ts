/** What a claim's COMMIT not answered in time fails with: it may have been made, or be made yet. */
export class CommitUnanswered extends Error {
  constructor(ms: number) {
    super(`the claim's COMMIT was not answered within ${ms} ms`);
  }
}

/**
 * The claim's COMMIT (ADR 0099), failing with CommitUnanswered once it has gone unanswered for `ms`: a database that
 * hangs (a synchronous standby gone, a stalled disk) would otherwise hold the turn's stream open after its start
 * frame for as long as it hangs. The claim is then looked up like one whose answer was lost.
 */
export function commitWithin(committed: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    committed,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CommitUnanswered(ms)), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}
