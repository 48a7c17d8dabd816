// http/: helpers every route uses: errors mapped to HTTP in one place, JSON body and query parsing, SSE.

export {
  type BodyReader,
  bodyValue,
  isUuid,
  parseBody,
  parseQuery,
  readBytes,
  readJsonBody,
} from './body.ts';
export { requesterKey, trustOnly, untrustedForwarding } from './clientAddress.ts';
export {
  AppError,
  type AppErrorOptions,
  type ErrorHandlerOptions,
  errorHandler,
  forbidden,
  invalidBody,
  notFound,
  sendError,
  unauthenticated,
} from './errors.ts';
export { escapeHtml } from './html.ts';
export { inFlightLimit, keyedRateLimit, publicRateLimit, type SharedCount } from './rateLimit.ts';
export { respond } from './respond.ts';
export { INTENT_HEADER, requireIntent, securityHeaders } from './security.ts';
export { SseWriter } from './sse.ts';
