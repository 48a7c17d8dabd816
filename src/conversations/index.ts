// conversations/: Conversations and Messages. The CRUD store and routes, the turn's write side (turnStore.ts),
// and the reads other rooms make (queries.ts).

export { exchangeRoutes } from './exchangeRoutes.ts';
export { type Message, type MessageStatus, titleFrom, type Usage } from './messages.ts';
export {
  allMessages,
  conversationExistsSql,
  everyMessageId,
  existingConversations,
  getReply,
  type HistoryRow,
  isConversationOf,
  isMessageOf,
  lastPlayerTextSql,
  messageIds,
  messageText,
  messageTexts,
  pathRoles,
  readHistoryTail,
  replyState,
  retitle,
  streamingReplies,
  titleOf,
  turnAndPath,
} from './queries.ts';
export {
  chargeTokens,
  checkpointMessages,
  endUndecided,
  finishMessage,
  insertNpcMessage,
  markInterrupted,
  markUnfinished,
  replyStored,
} from './replyStore.ts';
export { conversationRoutes } from './routes.ts';
export {
  budgetSpent,
  type PlayerSpending,
  type SpendingLimits,
  spendingByPlayer,
  todaysSpend,
} from './spending.ts';
export {
  type Conversation,
  conversationFromJson,
  conversationJsonSql,
  getConversation,
  getParticipants,
  type PublicationStatusSql,
  participantsJsonSql,
} from './store.ts';
export {
  beginPlayerTurn,
  beginRegenerate,
  releaseTurn,
  saveSummary,
  type TurnRelease,
} from './turnStore.ts';
