import { z } from 'zod';
import { Time } from './schemas.ts';

/** Who did it, when and why, and the same of its lifting (null while it holds). */
const Audit = {
  id: z.uuid(),
  reason: z.string(),
  createdBy: z.string(),
  createdAt: Time,
  liftedBy: z.string().nullable(),
  liftedAt: Time.nullable(),
  liftReason: z.string().nullable(),
};
export const TakedownView = z.object({ subject: z.string(), ...Audit });
export const BlockView = z.object({ did: z.string(), ...Audit });
export const ReportView = z.object({
  id: z.uuid(),
  subject: z.string(),
  reason: z.string(),
  reporterDid: z.string().nullable(),
  createdAt: Time,
});
export const TakedownResponse = z.object({ takedown: TakedownView });
export const TakedownListResponse = z.object({ takedowns: z.array(TakedownView) });
export const BlockResponse = z.object({ block: BlockView });
export const BlockListResponse = z.object({ blocks: z.array(BlockView) });
export const ReportListResponse = z.object({ reports: z.array(ReportView) });
/** POST /api/reader/reports: the report kept (a reader learns no more of it). */
export const ReportCreated = z.object({ report: ReportView.pick({ id: true, createdAt: true }) });
/** GET /api/admin/spending: tokens each Player spent today and this month (UTC), biggest spender first. */
export const SpendingResponse = z.object({
  players: z.array(
    z.object({ did: z.string(), handle: z.string().nullable(), today: z.number(), month: z.number() }),
  ),
});

export type TakedownView = z.output<typeof TakedownView>;
export type BlockView = z.output<typeof BlockView>;
export type ReportView = z.output<typeof ReportView>;
