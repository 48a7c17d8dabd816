import { foldPart, type Part, settleRunningTools, unfinishedCall, wellFormed } from '../parts/index.ts';

/** Parts with fragments folded in, and the fragments, for the frames that tell the browser. */
interface Folded {
  parts: Part[];
  fragments: Part[];
}

/**
 * Calls the reply ended in the middle of (cut at the output limit, stopped, the stream broken) keep the arguments
 * the NPC had sent of them, as the text it sent: seed 000 shows a call's arguments, and an abort keeps what was
 * produced.
 */
export function partialInputs(parts: Part[], inputs: ReadonlyMap<string, string>): Folded {
  const fragments: Part[] = [];
  for (const [id, text] of inputs) {
    const call = parts.find((p) => p.type === 'tool' && p.id === id);
    if (call?.type !== 'tool' || call.input !== undefined || !text) continue;
    const fragment = wellFormed<Part>({ type: 'tool', id, state: call.state, input: text });
    parts = foldPart(parts, fragment);
    fragments.push(fragment);
  }
  return { parts, fragments };
}

/**
 * Calls still running when the reply ended with `status`, settled as failed with why (as the row stores them), so
 * the browser watching it stops showing them "running…".
 */
export function settledCalls(parts: Part[], status: Parameters<typeof unfinishedCall>[0]): Folded {
  const error = unfinishedCall(status);
  const fragments: Part[] = [];
  for (const p of parts)
    if (p.type === 'tool' && p.state === 'running')
      fragments.push({ type: 'tool', id: p.id, state: 'failed', error });
  return { parts: settleRunningTools(parts, error), fragments };
}
