// slots/: the instance's small pools of work (imports, exports, page conversions, sandbox commands) shared
// fairly between Players, every wait and every hold bounded in time (ADR 0057). The policy core is pure.
export { type Asked, FairSlotsCore, type FairSlotsPolicy } from './core.ts';
export { slotOf, takeSlot } from './middleware.ts';
export { FairSlots, type FairSlotsOptions, type Slot, SlotDeadlineError } from './slots.ts';
