import { type Command, InvalidArgumentError } from 'commander';
import type { Config } from '../config/index.ts';
import { HISTORY_INTERVALS, type HistoryInterval } from '../contract/index.ts';
import { type Logger, createLogger } from '../core/index.ts';

/** Commander argument parsers that reject bad values with a message naming what was given. */
export function intOption(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (raw: string): number => {
    if (!/^-?\d+$/.test(raw)) throw new InvalidArgumentError(`expected a whole number, got "${raw}"`);
    const n = Number(raw);
    if (n < min || n > max) throw new InvalidArgumentError(`expected a number from ${min} to ${max}, got ${n}`);
    return n;
  };
}

export function numberOption(min: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n) || n < min) throw new InvalidArgumentError(`expected a number >= ${min}, got "${raw}"`);
    return n;
  };
}

/** `2025-01-01`, or a full ISO time; a date alone is midnight UTC. */
export function dateOption(raw: string): number {
  const t = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(raw) ? `${raw}T00:00:00Z` : raw);
  if (!Number.isFinite(t)) throw new InvalidArgumentError(`expected a date like 2025-01-01 or 2025-01-01T12:00:00Z, got "${raw}"`);
  return t;
}

export const listOption = (raw: string): string[] =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function intervalOption(raw: string): HistoryInterval {
  if (!HISTORY_INTERVALS.includes(raw as HistoryInterval)) throw new InvalidArgumentError(`expected ${HISTORY_INTERVALS.join(' or ')}, got "${raw}"`);
  return raw as HistoryInterval;
}

/** Resolves when the process is asked to stop (Ctrl-C or a service manager). */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
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

/** One of a fixed list of words. */
export function choiceOption<T extends string>(choices: readonly T[]) {
  return (raw: string): T => {
    if (!choices.includes(raw as T)) throw new InvalidArgumentError(`expected one of ${choices.join(', ')}, got "${raw}"`);
    return raw as T;
  };
}
