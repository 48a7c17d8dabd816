import type { Response } from 'express';
import { z } from 'zod';

/**
 * Answers with `body` encoded through its wire schema (src/wire/): Dates become ISO strings, and keys the
 * contract does not name are dropped, so an internal field (an owner's id, a rolling summary) never leaks. A
 * body that does not fit its contract throws: a bug on our side, answered as a 500, never sent malformed.
 */
export function respond<S extends z.ZodType>(
  res: Response,
  schema: S,
  body: z.output<S>,
  status = 200,
): void {
  res.status(status).json(z.encode(schema, body));
}
