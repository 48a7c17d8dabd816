// conversations/: Conversations and Messages. The store (the turn writes through it) and the CRUD routes.

export { exchangeRoutes } from './exchangeRoutes.ts';
export { type Message, type MessageStatus, titleFrom, type Usage } from './messages.ts';
export { everyMessageId, messageText, retitle, titleOf } from './queries.ts';
export { conversationRoutes } from './routes.ts';
export {
  budgetSpent,
  type PlayerSpending,
  type SpendingLimits,
  spendingByPlayer,
  todaysSpend,
} from './spending.ts';
export {
  allMessages,
  beginPlayerTurn,
  beginRegenerate,
  type Conversation,
  chargeTokens,
  checkpointMessages,
  finishMessage,
  getConversation,
  getParticipants,
  getReply,
  type HistoryRow,
  insertNpcMessage,
  lastPlayerText,
  linkShared,
  markInterrupted,
  markUnfinished,
  messageIds,
  readHistoryTail,
  releaseTurn,
  saveSummary,
} from './store.ts';
