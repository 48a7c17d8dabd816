import type { Logger } from 'pino';

/** The shape the rooms log through: a line, and the error that caused it when there is one. */
export type LogFn = (message: string, error?: unknown) => void;

/** A LogFn writing to a (subsystem) logger: with an error at level error, else info. */
export function logFn(logger: Logger): LogFn {
  return (message, error) => {
    if (error === undefined) logger.info(message);
    else logger.error({ err: error }, message);
  };
}
