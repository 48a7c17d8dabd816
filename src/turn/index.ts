// turn/: the hot path. Refuse early, assemble context (windowing, rolling summary, system prompt), stream the
// reply as Parts, persist on every exit path. Pure cores: window.ts, prompt.ts, history.ts, speaker.ts, and
// reply.ts (what each stream part and each ending do to a reply; run.ts does its I/O).
export { type HistoryTurn, promptChars, toModelMessages, turnTokens } from './history.ts';
export { assembleSystemPrompt, instructionsFor, rosterLine, systemPromptParts } from './prompt.ts';
export { turnRoutes } from './routes.ts';
export { chooseSpeaker } from './speaker.ts';
export { estimateTokens, windowHistory } from './window.ts';
