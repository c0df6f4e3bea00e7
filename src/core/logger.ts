import { pino } from 'pino';
import { errorFields } from './errors.ts';
import { plainText } from './text.ts';

/**
 * The logging surface every component takes. pino's logger satisfies it; tests pass a
 * capturing one. Components never build their own: the CLI creates one and hands it down.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};

/** Paths pino blanks out wherever they appear in a log object. */
export const REDACTED_PATHS = [
  'authorization',
  'Authorization',
  '*.authorization',
  '*.Authorization',
  'headers.authorization',
  '*.headers.authorization',
  'apiKey',
  '*.apiKey',
  'accessToken',
  '*.accessToken',
  'refreshToken',
  '*.refreshToken',
  'access_token',
  '*.access_token',
  'refresh_token',
  '*.refresh_token',
  'secretKey',
  '*.secretKey',
  'signature',
  '*.signature',
  // Alert sinks: a webhook secret, a bot token, and Slack/Discord URLs, which are credentials themselves.
  'secret',
  '*.secret',
  'botToken',
  '*.botToken',
  'sinks',
  '*.sinks',
];

export type LogFormat = 'json' | 'pretty';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface CreateLoggerOptions {
  /** `debug` adds one line per HTTP request. @default 'info' */
  level?: LogLevel;
  /** JSON lines for daemons; pretty for a person at a terminal. @default pretty on a TTY, json otherwise */
  format?: LogFormat;
  /** Where JSON lines go. @default standard error */
  destination?: NodeJS.WritableStream;
}

export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const format = options.format ?? (process.stderr.isTTY ? 'pretty' : 'json');
  const base = {
    level: options.level ?? 'info',
    redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' },
    // A message may quote the server (an event's headline, a symbol): a terminal never gets its escapes.
    hooks: {
      logMethod(this: pino.Logger, args: unknown[], method: (...a: unknown[]) => void) {
        method.apply(
          this,
          args.map((a) => (typeof a === 'string' ? plainText(a) : a)),
        );
      },
    },
    // An error is logged by its safe fields only: pino's own serializer would copy an axios
    // error's config (headers with the Authorization) and its request's raw header text.
    serializers: { err: safeError, error: safeError },
  };
  if (format === 'pretty') {
    return pino({
      ...base,
      transport: { target: 'pino-pretty', options: { destination: 2, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } },
    });
  }
  return pino(base, (options.destination ?? process.stderr) as pino.DestinationStream);
}

function safeError(value: unknown): unknown {
  return value instanceof Error ? errorFields(value) : value;
}
