// log/: the process's one logger (pino): levels, subsystem children, the request id every line of a request and
// of the work it starts carries (AsyncLocalStorage), HTTP request lines (pino-http), and what never reaches a log
// (cookies, authorization and DPoP headers, tokens, keys, message text, covered words). ADR 0056.

export { type LogFn, logFn } from './logFn.ts';
export { createLogger, type Logger, type LogSettings, type Subsystem, subsystemLog } from './logger.ts';
export { currentRequestId, requestLogging, withRequestId } from './request.ts';
export { safeError, scrub } from './safe.ts';
