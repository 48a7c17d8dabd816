import pino, { type DestinationStream, type LevelWithSilent, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { type LogFn, logFn } from './logFn.ts';
import { currentRequestId } from './request.ts';
import { safeError, scrub } from './safe.ts';

export type { Logger };

/** The parts of the server that log, each through a child logger named by `subsystem`. */
export type Subsystem =
  | 'server'
  | 'http'
  | 'turn'
  | 'publish'
  | 'appview'
  | 'labels'
  | 'outbound'
  | 'sandbox'
  | 'auth'
  | 'replies'
  | 'attachments'
  | 'db';

export interface LogSettings {
  level?: LevelWithSilent;
  /** JSON lines (production) or pino-pretty's coloured lines (development). */
  format?: 'json' | 'pretty';
  /** Where lines go instead of stdout (tests capture them). */
  destination?: DestinationStream;
}

// Defence in depth: the request serializer keeps no headers and the error serializer no payloads, but an object a
// room logs may still hold one of these keys.
const REDACT = [
  'req.headers.cookie',
  'req.headers.authorization',
  'req.headers.dpop',
  'res.headers["set-cookie"]',
  ...[
    'cookie',
    'authorization',
    'dpop',
    'token',
    'accessToken',
    'refreshToken',
    'access_token',
    'refresh_token',
    'idToken',
    'apiKey',
    'api_key',
    'password',
    'secret',
    'privateKey',
    'text',
    'parts',
    'prompt',
    'redactions',
    'covered',
  ].flatMap((k) => [k, `*.${k}`]),
];

export function createLogger(settings: LogSettings = {}): Logger {
  const options: pino.LoggerOptions = {
    level: settings.level ?? 'info',
    redact: { paths: REDACT, censor: '[redacted]' },
    serializers: { err: safeError, error: safeError },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Every line written inside a request, or inside work a request started, names that request.
    mixin: () => {
      const reqId = currentRequestId();
      return reqId ? { reqId } : {};
    },
    hooks: {
      // A message interpolates values (a URL, a reason): credentials in them are replaced.
      logMethod(args, method) {
        method.apply(
          this,
          args.map((a) => (typeof a === 'string' ? scrub(a) : a)) as Parameters<typeof method>,
        );
      },
    },
  };
  if (settings.destination) return pino(options, settings.destination);
  // In the main thread and synchronous, so the last line before an exit is written.
  if (settings.format === 'pretty')
    return pino(options, pretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
  return pino(options);
}

/** The LogFn a subsystem's rooms take. */
export function subsystemLog(logger: Logger, subsystem: Subsystem): LogFn {
  return logFn(logger.child({ subsystem }));
}
