import { accessSync, constants } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';
import type { Config } from '../config/index.ts';
import { HISTORY_INTERVALS, type HistoryInterval } from '../contract/index.ts';
import { ConfigError, type Logger, UsageError, WHY_NOT_WRITABLE, createLogger, makeDirectories, plainText } from '../core/index.ts';

/**
 * Commander argument parsers: every number has a range, and a bad value is refused with a
 * message naming what was given (commander adds the flag; exit 64).
 */
export function intOption(min: number, max: number) {
  return (raw: string): number => {
    const n = /^-?\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}, got "${raw}"`);
    return n;
  };
}

export const portOption = intOption(0, 65_535);
/** The sandbox's PRNG takes 32 bits. */
export const seedOption = intOption(0, 2 ** 32 - 1);

/** A decimal number in [min, max], or (min, max] when `aboveMin`. */
export function numberOption(min: number, max: number, { aboveMin = false } = {}) {
  return (raw: string): number => {
    const n = raw.trim() === '' ? Number.NaN : Number(raw);
    if (!Number.isFinite(n) || (aboveMin ? n <= min : n < min) || n > max) {
      throw new InvalidArgumentError(`expected a number ${aboveMin ? `above ${min} and up to` : `from ${min} to`} ${max}, got "${raw}"`);
    }
    return n;
  };
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/** `2025-01-01`, or a full ISO time; a date alone is midnight UTC. A day its month lacks (`2025-02-30`) is refused, not rolled over. */
export function dateOption(raw: string): number {
  const m = ISO_DATE.exec(raw);
  const t = m ? Date.parse(raw.length === 10 ? `${raw}T00:00:00Z` : raw) : Number.NaN;
  if (!m || !Number.isFinite(t)) throw new InvalidArgumentError(`expected a date like 2025-01-01 or 2025-01-01T12:00:00Z, got "${raw}"`);
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) throw new InvalidArgumentError(`no such date: "${raw}"`);
  return t;
}

/** A range the command works on must run forwards: one line naming both flags and values otherwise. */
export function checkRange(from: { flag: string; at: number }, to: { flag: string; at: number }): void {
  if (from.at < to.at) return;
  const iso = (t: number) => new Date(t).toISOString().replace('.000Z', 'Z');
  throw new UsageError(`${from.flag} ${iso(from.at)} is not before ${to.flag} ${iso(to.at)}`);
}

/** A comma-separated list; an empty one is refused (`--indexes ''` named no index, and read as "the configured ones"). */
export const listOption = (raw: string): string[] => {
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (list.length === 0) throw new InvalidArgumentError(`expected a comma-separated list, e.g. a,b, got "${raw}"`);
  return list;
};

export function intervalOption(raw: string): HistoryInterval {
  if (!HISTORY_INTERVALS.includes(raw as HistoryInterval)) throw new InvalidArgumentError(`expected ${HISTORY_INTERVALS.join(' or ')}, got "${raw}"`);
  return raw as HistoryInterval;
}

/**
 * What asks a command to stop: Ctrl-C, a service manager, and a hangup (its terminal closed, or
 * an operator's habitual `kill -HUP`: nothing is reloaded, so it stops cleanly, logged, rather
 * than dying silently as Node's default would; trial 32).
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Calls `handler` at the first stop signal, and stops listening: a second signal then does
 * what it would without us. The returned function stops listening before any came.
 */
export function onStopSignal(handler: (signal: NodeJS.Signals) => void): () => void {
  const stop = () => {
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    stop();
    handler(signal);
  };
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  // Takes over from what bin/indexbot.js installed while the code loaded. Its listener goes only
  // now: with none left for a moment, Node closes the signal's handle, and a signal received but
  // not yet dispatched was dropped with it (trial 26: SIGTERM at 0.4 s, and the daemon ran on).
  const host = process as unknown as Record<symbol, unknown>;
  const early = host[Symbol.for('indexbot.earlyStopHandler')] as ((signal: NodeJS.Signals) => void) | undefined;
  if (early) {
    for (const s of STOP_SIGNALS) process.off(s, early);
    delete host[Symbol.for('indexbot.earlyStopHandler')];
  }
  const came = host[Symbol.for('indexbot.earlyStop')] as NodeJS.Signals | undefined;
  if (came) {
    delete host[Symbol.for('indexbot.earlyStop')];
    // A second signal then ends the process, as the default would.
    stop();
    queueMicrotask(() => handler(came));
  }
  return stop;
}

/** Resolves when the process is asked to stop (Ctrl-C or a service manager). */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => onStopSignal(resolve));
}

/** A word of a command a user is told to run, quoted for a POSIX shell unless it is plain path characters (a path with a space broke the command). */
export function shellWord(word: string): string {
  return /^[\w./:@%+=,-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/** The exit codes README.md documents (sysexits.h): usage, software bug, temporary, config. */
export const EXIT = { usage: 64, bug: 70, temporary: 75, config: 78 } as const;

/**
 * Until the returned function is called, Ctrl-C or SIGTERM ends the process with one line, as
 * the CLI's last catch writes an error (`INTERRUPTED`, exit 75: running the command again
 * goes on), saying what `describe` gives. For a command whose work is kept as it goes by
 * synchronous writes, which a signal handler never interrupts halfway.
 */
export function exitOnInterrupt(describe: () => string): () => void {
  return onStopSignal(() => {
    let said: string;
    try {
      said = describe();
    } catch (e) {
      // What it kept could not be read (a file gone, say): the interruption is still said, and its exit code kept.
      said = `interrupted; what was kept could not be read: ${(e as Error).message}`;
    }
    process.stderr.write(`indexbot: ${plainText(said)} [INTERRUPTED]\n`);
    process.exit(EXIT.temporary);
  });
}

/** The flags of design.md, described once; each command takes the ones it uses. */
const CONFIG_FLAGS = {
  config: ['--config <file>', 'JSON config file (default config/indexbot.json, env INDEXBOT_CONFIG)'],
  baseUrl: ['--base-url <url>', 'API base URL ending in /v1 (env INDEXBOT_BASE_URL)'],
  db: ['--db <file>', 'SQLite file (default data/indexbot.db, env INDEXBOT_DB)'],
  tier: ['--tier <name>', 'public, standard, basic, premium or enterprise (env INDEXBOT_TIER)'],
  logFormat: ['--log-format <format>', 'json or pretty (env INDEXBOT_LOG_FORMAT)'],
  logLevel: ['--log-level <level>', 'trace, debug (adds a line per HTTP request), info, warn or error (env INDEXBOT_LOG_LEVEL)'],
  strategies: ['--strategies <dir>', 'where strategy modules are loaded from (default strategies/, env INDEXBOT_STRATEGIES)'],
} as const;

/** What every command that talks to the server takes. */
export const SERVER_FLAGS = ['config', 'baseUrl', 'db', 'tier'] as const;
export const LOG_FLAGS = ['logFormat', 'logLevel'] as const;

/** The logger a command writes with, as the config (and its flags) ask. */
export function loggerFor(config: Pick<Config, 'logLevel' | 'logFormat'>): Logger {
  return createLogger({ level: config.logLevel, format: config.logFormat });
}

export function withConfigFlags(command: Command, ...flags: (keyof typeof CONFIG_FLAGS)[]): Command {
  for (const f of flags) {
    const [flag, description] = CONFIG_FLAGS[f];
    command.option(flag, description);
  }
  return command;
}

/** `90d` or `12h`, from 1 hour to 10 years, in ms. */
export function durationOption(raw: string): number {
  const m = /^(\d+)(h|d)$/.exec(raw.trim());
  if (!m) throw new InvalidArgumentError(`expected a duration like 90d or 12h, got "${raw}"`);
  const ms = Number(m[1]) * (m[2] === 'd' ? 86_400_000 : 3_600_000);
  if (ms < 3_600_000 || ms > 3650 * 86_400_000) throw new InvalidArgumentError(`expected a duration from 1h to 3650d, got "${raw}"`);
  return ms;
}

/** A duration as the flag gives it back ({@link durationOption}'s inverse): whole days, else hours. */
export function durationFlag(ms: number): string {
  return ms % 86_400_000 === 0 ? `${ms / 86_400_000}d` : `${ms / 3_600_000}h`;
}

/** One of a fixed list of words. */
export function choiceOption<T extends string>(choices: readonly T[]) {
  return (raw: string): T => {
    if (!choices.includes(raw as T)) throw new InvalidArgumentError(`expected one of ${choices.join(', ')}, got "${raw}"`);
    return raw as T;
  };
}

/**
 * Makes a command's output directory (with its parents) and checks it is writable, before the
 * work that fills it: a directory that cannot be written is one line (exit 78) at once, not a
 * stack trace after hours of replays. `flag`: the flag that named it, when one did.
 */
export function prepareOutputDirectory(dir: string, flag?: string): string {
  try {
    makeDirectories(dir);
    accessSync(dir, constants.W_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    const why = WHY_NOT_WRITABLE[code];
    if (why === undefined) throw e;
    throw new ConfigError(`${flag === undefined ? 'output directory' : flag} ${dir}: cannot be created or written: ${why} (${code})`);
  }
  return dir;
}
