// labels/: following the network's labelers (com.atproto.label.subscribeLabels): labels verified against each
// labeler's key and kept in the `labels` table, which appview/'s statements read at serving time (ADR 0060).

export { HIDING } from './label.ts';
export { type FollowLabelsOptions, followLabelers } from './leader.ts';
export { noticeLabels, turnLabels } from './store.ts';
