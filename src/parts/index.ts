// parts/: the Part types, the fold, the SSE frame schema and the browser's frame application (live.ts). Pure;
// imported by the server and the browser.
export { attachmentsOf, flattenText } from './flatten.ts';
export { appendRun, foldPart, foldParts, readParts, settleRunningTools, unfinishedCall } from './fold.ts';
export {
  ErrorFrame,
  FinishFrame,
  FRAME_ERROR_CODES,
  Frame,
  type FrameErrorCode,
  mergeFrames,
  PartFrame,
  StartFrame,
  UsageSchema,
} from './frames.ts';
export { applyFrame, type LiveReply, type LiveTurn } from './live.ts';
export { plainName } from './plainName.ts';
export { readFrameStream } from './sse.ts';
export { stripMarkdown } from './stripMarkdown.ts';
export {
  type AttachmentPart,
  FilePart,
  Part,
  ReasoningPart,
  TextPart,
  ToolPart,
  ToolState,
  UrlPart,
} from './types.ts';
export { wellFormed, wellFormedText } from './wellFormed.ts';
