import { pino } from 'pino';
import pretty from 'pino-pretty';
import { errorFields } from './errors.ts';
import { secretValues, withoutSecrets } from './secrets.ts';
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

/**
 * `logger` with its info lines counted instead of written; debug, warnings and errors pass as
 * they were. A research command runs a backtest per trial or window, and the strategies' info
 * lines (an order refused, on each of hundreds of runs) buried the command's own.
 */
export function countingInfo(logger: Logger): { logger: Logger; counted(): number } {
  let counted = 0;
  const counting = rerouted(logger, (l, level) =>
    level === 'info'
      ? () => {
          counted++;
        }
      : (obj, msg) => l[level](obj, msg),
  );
  return { logger: counting, counted: () => counted };
}

/**
 * Every line at debug: for runs that repeat what a first run already logged (check-lookahead
 * replays the same events on the cache cut at each decision), so only --log-level debug
 * writes them again.
 */
export function demoted(logger: Logger): Logger {
  return rerouted(logger, (l) => (obj, msg) => l.debug(obj, msg));
}

type Level = 'debug' | 'info' | 'warn' | 'error';

/** `logger` with each level's lines handled as `route` says, in its children too. */
function rerouted(logger: Logger, route: (l: Logger, level: Level) => (obj: object, msg?: string) => void): Logger {
  const wrap = (l: Logger): Logger => ({
    debug: route(l, 'debug'),
    info: route(l, 'info'),
    warn: route(l, 'warn'),
    error: route(l, 'error'),
    child: (bindings) => wrap(l.child(bindings)),
  });
  return wrap(logger);
}

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
  level?: LogLevel | undefined;
  /** JSON lines for daemons; pretty for a person at a terminal. @default pretty on a TTY, json otherwise */
  format?: LogFormat | undefined;
  /** Where JSON lines go. @default standard error */
  destination?: NodeJS.WritableStream | undefined;
}

export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const format = options.format ?? (process.stderr.isTTY ? 'pretty' : 'json');
  // Besides the keys pino blanks out: a credential's value wherever a line quotes it (a strategy's error message, say).
  const secrets = secretValues();
  const base = {
    level: options.level ?? 'info',
    redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' },
    // A message may quote the server (an event's headline, a symbol): a terminal never gets its escapes.
    hooks: {
      logMethod(this: pino.Logger, args: unknown[], method: (...a: unknown[]) => void) {
        method.apply(
          this,
          args.map((a) => (typeof a === 'string' ? withoutSecrets(plainText(a), secrets) : a)),
        );
      },
    },
    formatters: secrets.length === 0 ? {} : { log: (obj: Record<string, unknown>) => scrubbed(obj, secrets, 0) as Record<string, unknown> },
    // An error is logged by its safe fields only: pino's own serializer would copy an axios
    // error's config (headers with the Authorization) and its request's raw header text.
    serializers: { err: safeError, error: safeError },
  };
  if (format === 'pretty') {
    // In this thread and synchronous: from a transport's worker thread the lines came after the
    // command's own last line (a backtest's failure scrolled away above 50 of them).
    return pino(base, pretty({ destination: 2, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
  }
  return pino(base, (options.destination ?? process.stderr) as pino.DestinationStream);
}

/** Strings within a log object, a few levels down, without the credentials' values. */
function scrubbed(value: unknown, secrets: readonly string[], depth: number): unknown {
  if (typeof value === 'string') return withoutSecrets(value, secrets);
  if (depth >= 4 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => scrubbed(v, secrets, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrubbed(v, secrets, depth + 1)]));
}

function safeError(value: unknown): unknown {
  return value instanceof Error ? errorFields(value) : value;
}
