// labels/: following the network's labelers (com.atproto.label.subscribeLabels): labels verified against each
// labeler's key and kept in the `labels` table, which appview/'s statements read at serving time (ADR 0060)
// through this room's fragments (hiddenByLabel, hidingLabelsBetween).

export { HIDING } from './label.ts';
export { type FollowLabelsOptions, followLabelers } from './leader.ts';
export { hiddenByLabel, hidingLabelsBetween, noticeLabels, turnLabels } from './store.ts';
