import type { Request, RequestHandler, Response } from 'express';
import { AppError } from '../http/index.ts';
import type { FairSlots, Slot } from './slots.ts';

/**
 * Takes a slot of `slots` for the request's Player — put it after the body has been read and size-checked, so a
 * body still arriving holds none. The slot goes back when the response closes; the request waiting for it gives
 * up when its client goes away. The route reads it with `slotOf(res)`.
 */
export function takeSlot(slots: FairSlots, key: (req: Request, res: Response) => string): RequestHandler {
  return (req, res, next) => {
    const gone = new AbortController();
    // Nobody is left to answer: said as a client error, so it is not logged as the server's.
    const onClose = () =>
      gone.abort(new AppError('CLIENT_CLOSED', 'The request was closed before a slot came free.'));
    res.once('close', onClose);
    slots.acquire(key(req, res), { signal: gone.signal }).then(
      (slot) => {
        res.off('close', onClose);
        res.locals.slot = slot;
        if (res.closed) slot.release();
        else res.once('close', slot.release);
        next();
      },
      (e: unknown) => {
        res.off('close', onClose);
        next(e);
      },
    );
  };
}

/** The slot `takeSlot` took for this response. */
export function slotOf(res: Response): Slot {
  const slot = res.locals.slot as Slot | undefined;
  if (!slot) throw new Error('No slot was taken for this route (takeSlot is missing).');
  return slot;
}
