import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { z } from 'zod';
import type { SnapshotKind } from '../api/index.ts';
import type { SinkConfig } from '../alerts/index.ts';
import { CLIENT_RANGES, TIERS, type Tier, type TierLimits, hasVersionSegment } from '../contract/index.ts';
import { EVENT_TYPES } from '../detect/events.ts';
import { ConfigError, LOG_LEVELS, describeIssues, inputError, jsonSyntaxText, type LogFormat, type LogLevel, MAX_TIMER_MS } from '../core/index.ts';
import { redisUrlProblem } from '../redis/index.ts';

/**
 * The ranges of every number a user sets, here or by a flag of the same meaning. Durations
 * that end up in a timer stay under Node's limit (2^31-1 ms), which would otherwise fire them
 * after 1 ms.
 */
export const BOUNDS = {
  intervalSeconds: { min: 0.1, max: 7 * 86_400 },
  rateWindowMs: CLIENT_RANGES.windowMs,
  requestsPerWindow: CLIENT_RANGES.requestsPerWindow,
  shutdownGraceMs: { min: 0, max: 600_000 },
  retentionDays: { min: 0, max: 36_500 },
  giveUpAfterHours: { max: Math.floor(MAX_TIMER_MS / 3_600_000) },
  timeoutMs: { min: 1, max: MAX_TIMER_MS },
  cash: { max: 1e12 },
  bps: { min: 0, max: 1_000 },
} as const;

const seconds = z.number().min(BOUNDS.intervalSeconds.min).max(BOUNDS.intervalSeconds.max);
const bps = z.number().min(BOUNDS.bps.min).max(BOUNDS.bps.max);

/** A secret given as `"env:NAME"` is read from the environment, so the file need not hold it. URLs of sinks are secrets too, checked once read. */
const secret = z.string().min(1);
const sinkFilter = z
  .strictObject({
    types: z.array(z.enum(EVENT_TYPES as [string, ...string[]])).min(1),
    indexes: z.array(z.string()).min(1),
    minWeightChange: z.number().min(0).max(1),
    strategyAlerts: z
      .union([z.boolean(), z.array(z.string()).min(1)], { error: 'expected true, false or a list of strategy names' })
      .describe('strategies whose ctx.alert(...) reach this sink: true (all), false, or names'),
  })
  .partial()
  .optional();
const sinkName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'a sink name is a lowercase slug')
  .optional();
const httpUrl = z.url({ protocol: /^https?$/ });
const sinkSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('console'), name: sinkName, filter: sinkFilter }),
  z.strictObject({ type: z.literal('webhook'), name: sinkName, filter: sinkFilter, url: secret, secret: secret.optional() }),
  z.strictObject({ type: z.literal('slack'), name: sinkName, filter: sinkFilter, url: secret }),
  z.strictObject({ type: z.literal('discord'), name: sinkName, filter: sinkFilter, url: secret }),
  z.strictObject({
    type: z.literal('telegram'),
    name: sinkName,
    filter: sinkFilter,
    botToken: secret,
    chatId: z.union([z.string(), z.number()], { error: 'expected a chat id, a number or a string' }),
    baseUrl: httpUrl.optional(),
    commands: z.boolean().optional().describe('answer /status, /pause NAME and the other commands sent from this chat'),
  }),
]);

/** The config file: every key optional, unknown keys refused. */
export const configFileSchema = z.strictObject({
  $schema: z.string().optional().describe('ignored; lets editors find a schema'),
  baseUrl: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe('API base URL ending in /v1'),
  tier: z.enum(TIERS).optional().describe('rate tier of the credential'),
  enterpriseLimits: z
    .strictObject({
      limit: z.number().int().min(BOUNDS.requestsPerWindow.min).max(BOUNDS.requestsPerWindow.max),
      burst: z.number().int().min(BOUNDS.requestsPerWindow.min).max(BOUNDS.requestsPerWindow.max),
    })
    .optional()
    .describe('limit and burst per window, for the enterprise tier'),
  rateWindowMs: z.number().int().min(BOUNDS.rateWindowMs.min).max(BOUNDS.rateWindowMs.max).optional().describe('length of the rate window (60000 on the real service)'),
  db: z.string().min(1).optional().describe('SQLite file'),
  indexes: z
    .union([z.literal('all'), z.array(z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'an index id is a lowercase slug')).min(1)], {
      // zod's own words for a union were "Invalid input" (trial 25, for "indexes": "sindex").
      error: 'expected "all" or a list of index ids, such as ["sindex", "mindex"]',
    })
    .optional()
    .describe('indexes to follow'),
  intervals: z
    .strictObject({ composition: seconds, performance: seconds, rebalancing: seconds, indexes: seconds, tokens: seconds })
    .partial()
    .optional()
    .describe('seconds between polls of each endpoint'),
  driftThreshold: z.number().gt(0).lt(1).optional().describe('|weight - target| that counts as drift'),
  shutdownGraceMs: z.number().int().min(BOUNDS.shutdownGraceMs.min).max(BOUNDS.shutdownGraceMs.max).optional().describe('how long to wait for polls in flight at shutdown'),
  retentionDays: z
    .number()
    .min(BOUNDS.retentionDays.min)
    .max(BOUNDS.retentionDays.max)
    .optional()
    .describe(
      'hourly, snapshots, finished alert rows, performance points (each index keeps its newest) and performance.updated events every consumer has read, older than this, are deleted; 0 keeps everything',
    ),
  log: z
    .strictObject({ level: z.enum(LOG_LEVELS), format: z.enum(['json', 'pretty']) })
    .partial()
    .optional(),
  alerts: z
    .strictObject({
      sinks: z.array(sinkSchema).describe('where alerts go: console, webhook, slack, discord, telegram'),
      giveUpAfterHours: z.number().positive().max(BOUNDS.giveUpAfterHours.max).describe('an alert still undelivered after this long is given up'),
    })
    .partial()
    .optional(),
  http: z
    .strictObject({
      listen: z.string().describe('host:port of the HTTP face (metrics, API, dashboard), e.g. 127.0.0.1:9464; off when absent'),
      token: secret.describe('bearer token every route but /healthz requires; needed off loopback; "env:NAME" reads it from the environment'),
      readyMaxAgeS: z.number().int().min(1).max(604_800).describe('/readyz fails when the last successful poll is older'),
      maxConnections: z.number().int().min(1).max(65_535).describe('open connections beyond this are refused'),
    })
    .partial()
    .optional()
    .describe('the HTTP face: /metrics, /healthz, /readyz, /api/v1, the dashboard'),
  rateLimit: z
    .strictObject({
      redis: z
        .string()
        .min(1)
        .describe('redis://, rediss://, redis-cluster:// or rediss-cluster:// URL (or "env:NAME") of the Redis that keeps the rate budget shared by every process on one credential'),
    })
    .partial()
    .optional(),
  onStrategyError: z.enum(['fail', 'skip']).optional().describe('a strategy that fails to load stops the bot, or is left out'),
  strategies: z
    .strictObject({
      dir: z.string().min(1).describe('where strategy modules are loaded from'),
      params: z.record(z.string(), z.record(z.string(), z.unknown())).describe('params per strategy name'),
      disabled: z.array(z.string()).describe('strategy names not to run'),
      timeoutMs: z.number().int().min(BOUNDS.timeoutMs.min).max(BOUNDS.timeoutMs.max).describe('time limit of one handler call'),
      maxAttempts: z.number().int().min(1).max(100).describe('attempts before an event is parked'),
      paper: z.strictObject({ cash: z.number().positive().max(BOUNDS.cash.max), feeBps: bps, slippageBps: bps }).partial(),
    })
    .partial()
    .optional(),
});

export type ConfigFile = z.infer<typeof configFileSchema>;

/** Defaults per tier, in seconds: rebalancing matters most, so it is polled most often. */
export const DEFAULT_INTERVALS: Record<Tier, Record<SnapshotKind, number>> = {
  public: { rebalancing: 60, composition: 300, performance: 900, indexes: 3600, tokens: 3600 },
  standard: { rebalancing: 30, composition: 120, performance: 600, indexes: 3600, tokens: 1800 },
  basic: { rebalancing: 15, composition: 60, performance: 300, indexes: 1800, tokens: 900 },
  premium: { rebalancing: 5, composition: 15, performance: 60, indexes: 900, tokens: 300 },
  enterprise: { rebalancing: 5, composition: 15, performance: 60, indexes: 900, tokens: 300 },
};

/** The one resolved configuration: file, then environment, then flags (each wins over the one before). */
export interface Config {
  file: string | undefined;
  baseUrl: string;
  tier: Tier;
  /** Set by a flag, the environment or the file; otherwise it follows the credential. */
  tierExplicit: boolean;
  /** No key nor keypair given, but the database holds the token pair `indexbot login` kept: see `withStoredSignIn`. */
  storedSignIn?: boolean;
  enterpriseLimits: TierLimits | undefined;
  windowMs: number;
  db: string;
  indexes: 'all' | string[];
  intervalsMs: Record<SnapshotKind, number>;
  /** `sinkNames`: every configured sink's name, even where `sinks` is not resolved (a command that sends nothing reads no secret). */
  alerts: { sinks: SinkConfig[]; sinkNames: string[]; giveUpAfterMs: number };
  driftThreshold: number;
  shutdownGraceMs: number;
  /** 0 keeps everything. */
  retentionDays: number;
  /** The HTTP face; undefined when off. */
  http?: HttpConfig | undefined;
  /**
   * Why the file's `http` settings go unused, when it has some but neither `http.listen` nor
   * `--http` turns the face on: a daemon says so as it starts (the settings may be meant for a
   * `--http` given elsewhere, so it is not an error).
   */
  httpUnused?: string | undefined;
  logLevel: LogLevel;
  logFormat: LogFormat | undefined;
  /** From INDEXBOT_API_KEY only: a key never lives in the config file. */
  apiKey: string | undefined;
  walletKeypairPath: string | undefined;
  /** Redis keeping the rate budget shared across processes (INDEXBOT_REDIS_URL, or `rateLimit.redis`); may hold a password. */
  redisUrl?: string | undefined;
  /** Where `redisUrl` came from, for messages: `INDEXBOT_REDIS_URL` or `<file>: rateLimit.redis`. */
  redisUrlSource?: string | undefined;
  strategies: {
    dir: string;
    /** Named by flag, env or file: a missing directory is then an error. */
    explicit: boolean;
    onError: 'fail' | 'skip';
    /** `warn` when the file names a strategies directory and this process runs another's (`--strategies`): its names may be the other's. */
    onUnknownName: 'fail' | 'warn' | 'ignore';
    params: Record<string, Record<string, unknown>>;
    disabled: string[];
    timeoutMs: number;
    maxAttempts: number;
    paper: { initialCash: number; feeBps: number; slippageBps: number };
  };
}

export interface HttpConfig {
  host: string;
  port: number;
  /** What asked for this address, for a line about it: `--http 127.0.0.1:9464` or `<file>: http.listen 127.0.0.1:9464`. */
  source: string;
  /** A flag gave the address (a bad one exits 64), or the config file (78). */
  fromFlag: boolean;
  token: string | undefined;
  readyMaxAgeS: number;
  maxConnections: number;
}

export interface ConfigFlags {
  /** `--http ADDR` of `run`. */
  http?: string;
  config?: string;
  baseUrl?: string;
  db?: string;
  tier?: string;
  logFormat?: string;
  logLevel?: string;
  strategies?: string;
}

export const DEFAULT_CONFIG_PATH = 'config/indexbot.json';

/**
 * The config from flags, environment and file. Commands that never talk to the server
 * (`status`, `backtest`, a strategies runner) pass `{ server: false }`: a missing base URL is
 * then not an error, and `baseUrl` is empty. Those that also serve no HTTP, share no rate
 * budget and send no alert (`backtest`, the research commands, `status`) pass
 * `{ services: false }` too: the secrets those read from the environment (`"env:NAME"`) are
 * then not asked for, and `http`, `redisUrl` and the alert sinks are left out.
 */
export function loadConfig(flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env, needs: { server?: boolean; services?: boolean } = {}): Config {
  const explicit = flags.config ?? env.INDEXBOT_CONFIG;
  const path = explicit ?? DEFAULT_CONFIG_PATH;
  const file = readConfigFile(path, explicit !== undefined);
  const where = file ? path : 'the environment and flags';

  const layer = <T>(flag: string, fromFlag: T | undefined, envName: string, key: string, fromFile: T | undefined) => layered(flag, fromFlag, envName, env, path, key, fromFile);
  const tierIn = layer('--tier', flags.tier, 'INDEXBOT_TIER', 'tier', file?.tier);
  const tierRaw = tierIn?.value;
  if (tierIn && !TIERS.includes(tierIn.value as Tier)) tierIn.refuse(`expected one of ${TIERS.join(', ')}`);
  const logFormatIn = layer('--log-format', flags.logFormat, 'INDEXBOT_LOG_FORMAT', 'log.format', file?.log?.format);
  const logFormat = logFormatIn?.value;
  if (logFormatIn && logFormat !== 'json' && logFormat !== 'pretty') logFormatIn.refuse('expected json or pretty');
  const logLevelIn = layer('--log-level', flags.logLevel, 'INDEXBOT_LOG_LEVEL', 'log.level', file?.log?.level);
  const logLevel = logLevelIn?.value ?? 'info';
  if (logLevelIn && !LOG_LEVELS.includes(logLevel as LogLevel)) logLevelIn.refuse(`expected one of ${LOG_LEVELS.join(', ')}`);
  const apiKey = env.INDEXBOT_API_KEY || undefined;
  const walletKeypairPath = env.INDEXBOT_WALLET_KEYPAIR || undefined;
  const tier = (tierRaw as Tier | undefined) ?? (apiKey ? 'basic' : walletKeypairPath ? 'standard' : 'public');
  if (tier === 'enterprise' && !file?.enterpriseLimits) {
    throw new ConfigError(`${where}: enterpriseLimits: the enterprise tier needs { "limit", "burst" } in the config file`);
  }
  const baseUrlIn = layer('--base-url', flags.baseUrl, 'INDEXBOT_BASE_URL', 'baseUrl', file?.baseUrl);
  const baseUrl = baseUrlIn?.value;
  if (baseUrlIn) checkBaseUrl(baseUrlIn);
  if (!baseUrl && needs.server !== false) throw new ConfigError(`no base URL: set "baseUrl" in ${path}, INDEXBOT_BASE_URL or --base-url`);
  const intervals = { ...DEFAULT_INTERVALS[tier], ...file?.intervals };
  const offline = needs.services === false;
  const strategiesDir = flags.strategies ?? env.INDEXBOT_STRATEGIES ?? file?.strategies?.dir;
  return {
    file: file ? path : undefined,
    baseUrl: baseUrl ?? '',
    tier,
    tierExplicit: tierIn !== undefined,
    enterpriseLimits: file?.enterpriseLimits,
    windowMs: file?.rateWindowMs ?? 60_000,
    db: flags.db ?? env.INDEXBOT_DB ?? file?.db ?? 'data/indexbot.db',
    indexes: file?.indexes ?? 'all',
    intervalsMs: Object.fromEntries(Object.entries(intervals).map(([k, v]) => [k, v * 1000])) as Record<SnapshotKind, number>,
    driftThreshold: file?.driftThreshold ?? 0.02,
    shutdownGraceMs: file?.shutdownGraceMs ?? 10_000,
    retentionDays: file?.retentionDays ?? 30,
    http: offline ? undefined : resolveHttp(flags.http ?? file?.http?.listen, flags.http === undefined ? `${path}: http.listen` : '--http', file?.http, path, env),
    httpUnused: offline || flags.http !== undefined ? undefined : httpUnused(file?.http, path),
    logLevel: logLevel as LogLevel,
    logFormat: logFormat as LogFormat | undefined,
    apiKey,
    walletKeypairPath,
    redisUrl: offline
      ? undefined
      : env.INDEXBOT_REDIS_URL
        ? resolveRedisUrl(env.INDEXBOT_REDIS_URL, 'the environment', env, 'INDEXBOT_REDIS_URL')
        : resolveRedisUrl(file?.rateLimit?.redis, where, env, 'rateLimit.redis'),
    redisUrlSource: env.INDEXBOT_REDIS_URL ? 'INDEXBOT_REDIS_URL' : `${where}: rateLimit.redis`,
    alerts: {
      sinks: offline ? [] : resolveSinks(file?.alerts?.sinks ?? [], path, env),
      sinkNames: (file?.alerts?.sinks ?? []).map(nameOfSink),
      giveUpAfterMs: (file?.alerts?.giveUpAfterHours ?? 24) * 3_600_000,
    },
    strategies: {
      dir: strategiesDir ?? 'strategies',
      explicit: strategiesDir !== undefined,
      onError: file?.onStrategyError ?? 'fail',
      onUnknownName: file?.strategies?.dir !== undefined && resolve(file.strategies.dir) !== resolve(strategiesDir ?? 'strategies') ? 'warn' : 'fail',
      params: file?.strategies?.params ?? {},
      disabled: file?.strategies?.disabled ?? [],
      timeoutMs: file?.strategies?.timeoutMs ?? 5_000,
      maxAttempts: file?.strategies?.maxAttempts ?? 3,
      paper: {
        initialCash: file?.strategies?.paper?.cash ?? 10_000,
        feeBps: file?.strategies?.paper?.feeBps ?? 10,
        slippageBps: file?.strategies?.paper?.slippageBps ?? 5,
      },
    },
  };
}

/**
 * The bearer token a command sends to a daemon's HTTP face: `INDEXBOT_HTTP_TOKEN`, else the
 * config file's `http.token` (`env:NAME` read). Apart from {@link loadConfig}, which resolves
 * `http` only for a process that serves it.
 */
export function httpToken(flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.INDEXBOT_HTTP_TOKEN) return env.INDEXBOT_HTTP_TOKEN;
  const explicit = flags.config ?? env.INDEXBOT_CONFIG;
  const path = explicit ?? DEFAULT_CONFIG_PATH;
  const token = readConfigFile(path, explicit !== undefined)?.http?.token;
  return token === undefined ? undefined : fromEnv(token, 'http.token', path, env);
}

/**
 * A setting from the first of a flag, an environment variable and the config file that gives
 * it, and a refusal naming that one: a bad flag is a usage error (exit 64) naming the flag, a
 * bad variable or file value a configuration error (exit 78) naming the variable, or the file and key.
 */
function layered<T>(flag: string, fromFlag: T | undefined, envName: string, env: NodeJS.ProcessEnv, path: string, key: string, fromFile: T | undefined) {
  const fromEnvVar = env[envName] as T | undefined;
  const value = fromFlag ?? fromEnvVar ?? fromFile;
  if (value === undefined) return undefined;
  /** `echo: false` for a value that may hold a secret. */
  const refuse = (expected: string, echo = true): never => {
    const got = echo ? `${expected}, got ${JSON.stringify(value)}` : expected;
    throw inputError(fromFlag !== undefined ? `${flag}: ${got}` : fromEnvVar !== undefined ? `${envName}: ${got}` : `${path}: ${key}: ${got}`, fromFlag !== undefined);
  };
  return { value, refuse };
}

/** The client checks it too; here the message names the flag, variable or key it came from. */
function checkBaseUrl(input: { value: string; refuse: (expected: string, echo?: boolean) => never }): void {
  let url: URL | undefined;
  try {
    url = new URL(input.value);
  } catch {
    // Not parsed: shown as given.
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) input.refuse('expected an http(s) URL such as https://host/v1');
  if (url!.username || url!.password) input.refuse('expected a URL without credentials (the API key goes in INDEXBOT_API_KEY)', false);
  // The spec's base address ends in its version: without it every route is a 404 that names no setting.
  if (!hasVersionSegment(url!)) input.refuse(`expected the API's base URL, ending in its version segment /v1 (such as ${url!.origin}/v1)`);
}

function fromEnv(v: string, where: string, path: string, env: NodeJS.ProcessEnv): string {
  if (!v.startsWith('env:')) return v;
  const value = env[v.slice(4)];
  if (!value) throw new ConfigError(`${path}: ${where}: environment variable ${v.slice(4)} is not set`);
  return value;
}

/** `host:port` (IPv6 in brackets); port 0 picks a free one. */
export function parseListenAddress(raw: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(raw.trim());
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port > 65_535) return undefined;
  return { host: (m[1] ?? m[2])!, port };
}

export const isLoopback = (host: string) => host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);

/** /readyz's limit on the heartbeat's age, and `status --check`'s, unless set. */
export const DEFAULT_READY_MAX_AGE_S = 300;

function resolveHttp(listen: string | undefined, source: string, file: ConfigFile['http'], path: string, env: NodeJS.ProcessEnv): HttpConfig | undefined {
  if (listen === undefined) return undefined;
  const fromFlag = source === '--http';
  const address = parseListenAddress(listen);
  if (!address) {
    const message = `${source}: expected host:port such as 127.0.0.1:9464, got ${JSON.stringify(listen)}`;
    throw inputError(message, fromFlag);
  }
  const token = file?.token === undefined ? undefined : fromEnv(file.token, 'http.token', path, env);
  if (token !== undefined) checkTokenLength(token, path);
  // Dotted digits that are no IPv4 address (999.1.1.1) would be taken for a host name and told to need a token.
  if (/^[\d.]+$/.test(address.host) && isIP(address.host) === 0) {
    const message = `${source}: ${address.host} is not an IP address (IPv4 is four numbers 0 to 255, such as 127.0.0.1), in ${JSON.stringify(listen)}`;
    throw inputError(message, fromFlag);
  }
  if (!isLoopback(address.host) && token === undefined) {
    throw new ConfigError(`http address ${listen} is not loopback: set http.token in ${path} (or bind 127.0.0.1) so that nobody else can steer the bot`);
  }
  return { ...address, source: `${source} ${listen}`, fromFlag, token, readyMaxAgeS: file?.readyMaxAgeS ?? DEFAULT_READY_MAX_AGE_S, maxConnections: file?.maxConnections ?? 1024 };
}

function checkTokenLength(token: string, path: string): void {
  if (token.length < 16) throw new ConfigError(`${path}: http.token: expected at least 16 characters, got ${token.length}`);
}

function httpUnused(file: ConfigFile['http'], path: string): string | undefined {
  const set = Object.keys(file ?? {});
  if (set.length === 0 || file?.listen !== undefined) return undefined;
  // A token written in the file is refused now, not at the first --http (doctor passed one run --http refused).
  if (file?.token !== undefined && !file.token.startsWith('env:')) checkTokenLength(file.token, path);
  return `${path}: ${set.map((k) => `http.${k}`).join(', ')} set but not http.listen: no HTTP face (metrics, dashboard, API, event stream) runs; set http.listen or pass --http`;
}

/**
 * A Redis URL from the environment, the file (`env:NAME` read) or a flag (`fromFlag`: a usage
 * error, exit 64), checked. The message names where it came from (`source`) and what is wrong,
 * never the URL: it may hold a password.
 */
export function resolveRedisUrl(raw: string | undefined, where: string, env: NodeJS.ProcessEnv, source = 'rateLimit.redis (or INDEXBOT_REDIS_URL)', fromFlag = false): string | undefined {
  if (raw === undefined) return undefined;
  const value = fromEnv(raw, source, where, env);
  const problem = redisUrlProblem(value);
  if (problem) throw inputError(`${where}: ${source}: expected a redis://, rediss://, redis-cluster://host:port[,host:port…] or rediss-cluster:// URL (${problem})`, fromFlag);
  return value;
}

/** A sink's name: its own, else its type, numbered when several share one. */
function nameOfSink(s: z.infer<typeof sinkSchema>, i: number, sinks: readonly z.infer<typeof sinkSchema>[]): string {
  return s.name ?? (sinks.filter((x) => x.type === s.type).length > 1 ? `${s.type}-${i + 1}` : s.type);
}

/** Names each sink and reads `env:` secrets. */
function resolveSinks(sinks: z.infer<typeof sinkSchema>[], path: string, env: NodeJS.ProcessEnv): SinkConfig[] {
  const out = sinks.map((s, i): SinkConfig => {
    const name = nameOfSink(s, i, sinks);
    const where = `alerts.sinks.${i}`;
    const filter = s.filter as SinkConfig['filter'];
    switch (s.type) {
      case 'console':
        return { type: 'console', name, filter };
      case 'webhook':
        return {
          type: 'webhook',
          name,
          filter,
          url: checkUrl(fromEnv(s.url, `${where}.url`, path, env), path, `${where}.url`),
          secret: s.secret === undefined ? undefined : fromEnv(s.secret, `${where}.secret`, path, env),
        };
      case 'slack':
      case 'discord':
        return { type: s.type, name, filter, url: checkUrl(fromEnv(s.url, `${where}.url`, path, env), path, `${where}.url`) };
      default:
        return { type: 'telegram', name, filter, botToken: fromEnv(s.botToken, `${where}.botToken`, path, env), chatId: s.chatId, baseUrl: s.baseUrl, commands: s.commands };
    }
  });
  const names = out.map((s) => s.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) throw new ConfigError(`${path}: alerts.sinks: two sinks are named "${dup}"; give each a distinct "name"`);
  return out;
}

/** The URL itself is a credential (Slack and Discord webhooks): the message never repeats it. */
function checkUrl(url: string, path: string, where: string): string {
  if (!/^https?:\/\/[^\s]+$/.test(url)) throw new ConfigError(`${path}: ${where}: expected an http(s) URL`);
  return url;
}

/** Files holding secrets that others than the owner can read: the config, the wallet keypair. */
export function permissionWarnings(config: Config): string[] {
  const out: string[] = [];
  for (const [what, path] of [
    ['config file', config.file],
    ['wallet keypair', config.walletKeypairPath],
    // It holds the wallet's tokens after `login`, and the bot's books.
    ['database', config.db],
  ] as const) {
    if (!path) continue;
    try {
      const stat = statSync(path);
      // A device (`--db /dev/null`) is refused where it is opened.
      if (stat.isFile() && (stat.mode & 0o077) !== 0) out.push(`the ${what} ${path} is readable by group or others; chmod 600 it`);
    } catch {
      // A missing keypair is reported where it is read.
    }
  }
  return out;
}

function readConfigFile(path: string, required: boolean): ConfigFile | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' && !required) return undefined;
    throw new ConfigError(`cannot read config file ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let json: unknown;
  try {
    // Some editors on Windows start a UTF-8 file with a byte-order mark.
    json = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (e) {
    throw new ConfigError(`${path}: not valid JSON (${jsonSyntaxText(e, text.replace(/^\uFEFF/, ''))})`);
  }
  const parsed = configFileSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  throw new ConfigError(`${path}: ${describeIssues(parsed.error)}`);
}
