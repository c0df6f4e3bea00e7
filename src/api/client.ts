import type { AxiosAdapter } from 'axios';
import type { z } from 'zod';
import { FileTokenStore, type TokenStore, WalletKeypair, WalletSession } from '../auth/index.ts';
import {
  CLIENT_RANGES,
  type Challenge,
  type Composition,
  type HistoryInterval,
  type HistoryPoint,
  type IndexDetail,
  type IndexSummary,
  type Performance,
  type Portfolio,
  type Rebalance,
  type RebalanceStatus,
  type RecordSchemas,
  type Token,
  type TokenPair,
  buildSchemas,
  hasVersionSegment,
} from '../contract/index.ts';
import { type Clock, ConfigError, type Logger, ResponseValidationError, checkOptionRange, silentLogger, systemClock } from '../core/index.ts';
import { type Priority, type RateGateSeed, type RateGateState, TIERS, type Tier, type TierLimits } from '../ratelimit/index.ts';
import { type Page, PageIterator, type PageRequest } from './pagination.ts';
import { type AuthMode, type RequestObserver, type SharedBudgetSource, Transport } from './transport.ts';

export interface IndexClientOptions {
  /** The API base URL, ending in `/v1`, e.g. `http://127.0.0.1:7420/v1`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer`. Takes precedence over a wallet session. */
  apiKey?: string | undefined;
  /** Wallet for sign-in; without it a stored token pair is still used and refreshed. */
  keypair?: WalletKeypair | undefined;
  /** Where the token pair is kept between runs. @default a 0600 file `data/tokens.json` */
  tokenStore?: TokenStore | undefined;
  /**
   * The credential's tier, which sets the pace. @default `basic` for an API key, `standard`
   * for a wallet session, `public` without a credential
   */
  tier?: Tier | undefined;
  /** Limit and burst of the enterprise tier (custom per contract). */
  enterpriseLimits?: TierLimits | undefined;
  /** Rate window length, 1 ms to 1 h; shorten it together with the sandbox's `rateWindowMs`. @default 60000 */
  windowMs?: number | undefined;
  /** Per attempt, from 1 ms (there is no "no timeout"). @default 10000 */
  timeoutMs?: number | undefined;
  /** Retries of a GET after a network error, timeout or 500/502/503/504, 0 to 100. @default 3 */
  retries?: number | undefined;
  /** First backoff step; full jitter, doubling per retry. @default 500 */
  retryBaseMs?: number | undefined;
  /** @default 30000 */
  retryMaxMs?: number | undefined;
  /** How often a request is re-queued after a 429 before the 429 is returned, 0 to 1000. @default 5 */
  maxRateLimitRequeues?: number | undefined;
  /** `page`/`limit` (the contract) or `limit`/`offset` (one form of the live docs). @default 'page' */
  paging?: 'page' | 'offset' | undefined;
  /** Items per request when iterating a list, 1 to 100. @default 100 */
  pageSize?: number | undefined;
  /** Refresh the access token this long before it expires. @default 300000 */
  refreshMarginMs?: number | undefined;
  /** @default systemClock */
  clock?: Clock | undefined;
  /** Jitter source, in [0, 1). @default Math.random */
  random?: (() => number) | undefined;
  /** @default silentLogger */
  logger?: Logger | undefined;
  /** Told of every attempt and retry (metrics). */
  observer?: RequestObserver | undefined;
  /** An axios adapter in place of HTTP, for tests that record requests. */
  adapter?: AxiosAdapter | undefined;
  /** Where each rate gate starts, by gate name: what the last process knew (see `RateGateSeed`). */
  gateSeeds?: ReadonlyMap<string, RateGateSeed> | undefined;
  /** Budgets shared with other processes on the same credential, e.g. `new RedisBudgets({ url })`. */
  sharedBudgets?: SharedBudgetSource | undefined;
}

export interface CallOptions {
  priority?: Priority | undefined;
  signal?: AbortSignal | undefined;
  /**
   * Ends the call only while it waits its turn (the rate gate, a retry's backoff); a request
   * on its way to the server is left to finish. A daemon that stops drops the polls still
   * waiting at once, however slowly the gate admits them.
   */
  waitSignal?: AbortSignal | undefined;
}

export interface ListOptions extends CallOptions {
  page?: number | undefined;
  limit?: number | undefined;
}

export interface HistoryQuery {
  from?: Date | string | undefined;
  to?: Date | string | undefined;
  interval?: HistoryInterval | undefined;
}

export interface RebalancingQuery {
  status?: RebalanceStatus | undefined;
  from?: Date | string | undefined;
  to?: Date | string | undefined;
}

type Query = Record<string, string | number | undefined>;

/** What `snapshot()` returns for each endpoint it polls. */
export interface SnapshotValues {
  indexes: IndexSummary[];
  tokens: Token[];
  composition: Composition;
  performance: Performance;
  rebalancing: Rebalance[];
}
export type SnapshotKind = keyof SnapshotValues;

/** How urgent each polled endpoint is: its place in the rate gate's queue, and how briefly the poller backs it off. */
export const SNAPSHOT_PRIORITY: Readonly<Record<SnapshotKind, Priority>> = { rebalancing: 'high', composition: 'normal', indexes: 'normal', performance: 'low', tokens: 'low' };

/** The path each snapshot kind polls; `{index_id}` stands for the index, as in endpointTemplate's labels. */
export const SNAPSHOT_PATH: Readonly<Record<SnapshotKind, string>> = {
  indexes: '/indexes',
  tokens: '/tokens',
  composition: '/indexes/{index_id}/composition',
  performance: '/indexes/{index_id}/performance',
  rebalancing: '/indexes/{index_id}/rebalancing',
};

/**
 * One endpoint's data as received (`raw`, to store as it was) and as validated: `value`
 * when it matches the contract, `error` when it does not. Transport and API errors throw.
 */
export interface Snapshot<K extends SnapshotKind> {
  kind: K;
  raw: unknown;
  requestId: string | undefined;
  value?: SnapshotValues[K];
  error?: ResponseValidationError;
}

/**
 * Every option checked at construction, naming it and the value received: a tier misspelt, or
 * a negative timeout, would otherwise surface at the first request as an error about something
 * else (trial 30: `tier: 'gold'` failed the first call with a TypeError about a rate limit).
 */
function checkClientOptions(o: IndexClientOptions): void {
  const refuse = (message: string) => new ConfigError(`IndexClient: ${message}`);
  if (o.tier !== undefined && !TIERS.includes(o.tier)) throw refuse(`Expected \`tier\` to be one of ${TIERS.join(', ')}, got \`${String(o.tier)}\``);
  if (o.tier === 'enterprise' && o.enterpriseLimits === undefined) throw refuse('the enterprise tier needs `enterpriseLimits` { limit, burst }');
  checkOptionRange('enterpriseLimits.limit', o.enterpriseLimits?.limit, CLIENT_RANGES.requestsPerWindow, refuse);
  checkOptionRange('enterpriseLimits.burst', o.enterpriseLimits?.burst, CLIENT_RANGES.requestsPerWindow, refuse);
  if (o.enterpriseLimits !== undefined && (o.enterpriseLimits.limit === undefined || o.enterpriseLimits.burst === undefined)) {
    throw refuse(`Expected \`enterpriseLimits\` to be { limit, burst }, got \`${JSON.stringify(o.enterpriseLimits)}\``);
  }
  checkOptionRange('windowMs', o.windowMs, CLIENT_RANGES.windowMs, refuse);
  checkOptionRange('timeoutMs', o.timeoutMs, CLIENT_RANGES.timeoutMs, refuse);
  checkOptionRange('retries', o.retries, CLIENT_RANGES.retries, refuse);
  checkOptionRange('retryBaseMs', o.retryBaseMs, CLIENT_RANGES.delayMs, refuse);
  checkOptionRange('retryMaxMs', o.retryMaxMs, CLIENT_RANGES.delayMs, refuse);
  checkOptionRange('maxRateLimitRequeues', o.maxRateLimitRequeues, CLIENT_RANGES.maxRateLimitRequeues, refuse);
  checkOptionRange('pageSize', o.pageSize, CLIENT_RANGES.pageSize, refuse);
  checkOptionRange('refreshMarginMs', o.refreshMarginMs, CLIENT_RANGES.delayMs, refuse);
  if (o.paging !== undefined && o.paging !== 'page' && o.paging !== 'offset') throw refuse(`Expected \`paging\` to be 'page' or 'offset', got \`${String(o.paging)}\``);
}

/** `INDEXBOT_TIER` as a tier, refused by the variable's name as the CLI refuses it. */
function envTier(raw: string | undefined): Tier | undefined {
  if (!raw) return undefined;
  if (!TIERS.includes(raw as Tier)) throw new ConfigError(`INDEXBOT_TIER: expected one of ${TIERS.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw as Tier;
}

/**
 * The typed client of the Index Fund Data Service. One method per endpoint; every list
 * endpoint also has an `iterate…` method over all its pages.
 */
export class IndexClient {
  readonly baseUrl: string;
  readonly session: WalletSession | undefined;
  private readonly transport: Transport;
  private readonly schemas: RecordSchemas;
  private readonly paging: 'page' | 'offset';
  private readonly pageSize: number;

  constructor(options: IndexClientOptions) {
    this.baseUrl = checkBaseUrl(options.baseUrl);
    checkClientOptions(options);
    this.pageSize = options.pageSize ?? 100;
    this.paging = options.paging ?? 'page';
    const logger = options.logger ?? silentLogger;
    const warned = new Set<string>();
    const warnOnce = (key: string, obj: object, msg: string) => {
      if (warned.has(key)) return;
      warned.add(key);
      logger.warn(obj, msg);
    };
    this.schemas = buildSchemas({
      mode: 'lenient',
      onUnknown: (field, value) => warnOnce(`enum:${field}:${value}`, { field, value }, 'unknown enum value from server; passing it through'),
    });
    const clock = options.clock ?? systemClock;
    const hasWallet = options.keypair !== undefined || options.tokenStore !== undefined;
    this.session =
      options.apiKey || !hasWallet
        ? undefined
        : new WalletSession({
            baseUrl: this.baseUrl,
            keypair: options.keypair,
            store: options.tokenStore ?? new FileTokenStore('data/tokens.json'),
            clock,
            logger,
            refreshMarginMs: options.refreshMarginMs,
            endpoints: {
              challenge: (wallet) => this.createChallenge(wallet),
              signIn: (body) => this.signInWithWallet(body),
              refresh: (token) => this.refreshTokens(token),
            },
          });
    this.transport = new Transport({
      baseUrl: this.baseUrl,
      apiKey: options.apiKey,
      session: this.session,
      tier: options.tier,
      enterpriseLimits: options.enterpriseLimits,
      windowMs: options.windowMs ?? 60_000,
      timeoutMs: options.timeoutMs ?? 10_000,
      retries: options.retries ?? 3,
      retryBaseMs: options.retryBaseMs ?? 500,
      retryMaxMs: options.retryMaxMs ?? 30_000,
      maxRateLimitRequeues: options.maxRateLimitRequeues ?? 5,
      clock,
      random: options.random ?? Math.random,
      logger,
      adapter: options.adapter,
      gateSeeds: options.gateSeeds,
      sharedBudgets: options.sharedBudgets,
      schemas: this.schemas,
      warnOnce,
      observer: options.observer,
    });
  }

  /**
   * A client configured from the environment: `INDEXBOT_BASE_URL`, `INDEXBOT_API_KEY`,
   * `INDEXBOT_WALLET_KEYPAIR` (a Solana CLI keypair file), `INDEXBOT_TIER`.
   */
  static fromEnv(overrides: Partial<IndexClientOptions> = {}, env: NodeJS.ProcessEnv = process.env): IndexClient {
    const baseUrl = overrides.baseUrl ?? env.INDEXBOT_BASE_URL;
    if (!baseUrl) throw new ConfigError('no base URL: set INDEXBOT_BASE_URL, or pass fromEnv({ baseUrl })');
    const keypairPath = env.INDEXBOT_WALLET_KEYPAIR;
    return new IndexClient({
      apiKey: env.INDEXBOT_API_KEY || undefined,
      keypair: keypairPath ? WalletKeypair.fromFile(keypairPath) : undefined,
      tier: envTier(env.INDEXBOT_TIER),
      ...overrides,
      baseUrl,
    });
  }

  /** State of each credential's rate gate. */
  rateGates(): RateGateState[] {
    return this.transport.gateStates();
  }

  listIndexes(options: ListOptions = {}): Promise<Page<IndexSummary>> {
    return this.page('/indexes', {}, this.schemas.indexSummary, options);
  }

  iterateIndexes(options: CallOptions = {}): PageIterator<IndexSummary> {
    return this.iterate('/indexes', {}, this.schemas.indexSummary, options);
  }

  getIndex(indexId: string, options: CallOptions = {}): Promise<IndexDetail> {
    return this.one('GET', `/indexes/${seg(indexId)}`, this.schemas.indexDetail, options);
  }

  getComposition(indexId: string, options: CallOptions = {}): Promise<Composition> {
    return this.one('GET', `/indexes/${seg(indexId)}/composition`, this.schemas.composition, options);
  }

  getPerformance(indexId: string, options: CallOptions = {}): Promise<Performance> {
    return this.one('GET', `/indexes/${seg(indexId)}/performance`, this.schemas.performance, options);
  }

  listHistory(indexId: string, query: HistoryQuery = {}, options: ListOptions = {}): Promise<Page<HistoryPoint>> {
    return this.page(`/indexes/${seg(indexId)}/history`, historyQuery(query), this.schemas.historyPoint, { priority: 'low', ...options });
  }

  iterateHistory(indexId: string, query: HistoryQuery = {}, options: CallOptions = {}): PageIterator<HistoryPoint> {
    return this.iterate(`/indexes/${seg(indexId)}/history`, historyQuery(query), this.schemas.historyPoint, { priority: 'low', ...options });
  }

  listRebalancing(indexId: string, query: RebalancingQuery = {}, options: ListOptions = {}): Promise<Page<Rebalance>> {
    return this.page(`/indexes/${seg(indexId)}/rebalancing`, rebalancingQuery(query), this.schemas.rebalance, { priority: 'high', ...options });
  }

  iterateRebalancing(indexId: string, query: RebalancingQuery = {}, options: CallOptions = {}): PageIterator<Rebalance> {
    return this.iterate(`/indexes/${seg(indexId)}/rebalancing`, rebalancingQuery(query), this.schemas.rebalance, { priority: 'high', ...options });
  }

  listTokens(options: ListOptions = {}): Promise<Page<Token>> {
    return this.page('/tokens', {}, this.schemas.token, options);
  }

  iterateTokens(options: CallOptions = {}): PageIterator<Token> {
    return this.iterate('/tokens', {}, this.schemas.token, options);
  }

  getPortfolio(options: CallOptions = {}): Promise<Portfolio> {
    return this.one('GET', '/user/portfolio', this.schemas.portfolio, { priority: 'high', ...options }, 'required');
  }

  createChallenge(wallet: string, options: CallOptions = {}): Promise<Challenge> {
    return this.one('POST', '/auth/challenge', this.schemas.challenge, { priority: 'high', ...options }, 'none', { wallet });
  }

  signInWithWallet(body: { wallet: string; message: string; signature: string }, options: CallOptions = {}): Promise<TokenPair> {
    return this.one('POST', '/auth/wallet', this.schemas.tokenPair, { priority: 'high', ...options }, 'none', body);
  }

  refreshTokens(refreshToken: string, options: CallOptions = {}): Promise<TokenPair> {
    return this.one('POST', '/auth/refresh', this.schemas.tokenPair, { priority: 'high', ...options }, 'none', { refresh_token: refreshToken });
  }

  /**
   * The current state of one polled endpoint. Lists are read to the end (the rebalancing
   * feed only its newest page, which is where anything new appears).
   */
  async snapshot<K extends SnapshotKind>(kind: K, indexId?: string, options: CallOptions = {}): Promise<Snapshot<K>> {
    const single = async (path: string, schema: z.ZodType, priority: Priority) => {
      const { body, requestId } = await this.transport.request({
        method: 'GET',
        path,
        auth: 'optional',
        priority: options.priority ?? priority,
        ...signalsOf(options),
      });
      return this.checked(kind, body.data, requestId, () => this.transport.validate(schema, body.data, `GET ${path}`, 'data', requestId));
    };
    const list = async (path: string, schema: z.ZodType, priority: Priority, allPages: boolean) => {
      const raw: unknown[] = [];
      let requestId: string | undefined;
      const call = { priority: options.priority ?? priority, ...signalsOf(options) };
      // Items are validated together once all pages are in, so a bad item is a snapshot error.
      const pages = new PageIterator(
        async (request) => {
          const got = await this.fetchRawPage(path, {}, call, request);
          requestId = got.requestId;
          return got.page;
        },
        this.pageSize,
        `GET ${path}`,
      ).pages();
      for await (const page of pages) {
        raw.push(...page.items);
        if (!allPages) break;
      }
      return this.checked(kind, raw, requestId, () => raw.map((it, i) => this.transport.validate(schema, it, `GET ${path}`, `data.${i}`, requestId)));
    };
    // An unknown kind (from plain JavaScript) has no path, and is refused below.
    const template = (SNAPSHOT_PATH[kind] as string | undefined) ?? '';
    if (template.includes('{index_id}') && !indexId) throw new ConfigError(`a ${kind} snapshot needs an index id`);
    const polled = template.replace('{index_id}', seg(indexId ?? ''));
    const priority = SNAPSHOT_PRIORITY[kind];
    switch (kind) {
      case 'indexes':
        return list(polled, this.schemas.indexSummary, priority, true) as Promise<Snapshot<K>>;
      case 'tokens':
        return list(polled, this.schemas.token, priority, true) as Promise<Snapshot<K>>;
      case 'composition':
        return single(polled, this.schemas.composition, priority) as Promise<Snapshot<K>>;
      case 'performance':
        return single(polled, this.schemas.performance, priority) as Promise<Snapshot<K>>;
      case 'rebalancing':
        return list(polled, this.schemas.rebalance, priority, false) as Promise<Snapshot<K>>;
    }
    throw new ConfigError(`unknown snapshot kind ${String(kind)}`);
  }

  private checked<K extends SnapshotKind>(kind: K, raw: unknown, requestId: string | undefined, validate: () => unknown): Snapshot<K> {
    try {
      return { kind, raw, requestId, value: validate() as SnapshotValues[K] };
    } catch (e) {
      if (!(e instanceof ResponseValidationError)) throw e;
      return { kind, raw, requestId, error: e };
    }
  }

  private async one<S extends z.ZodType>(method: 'GET' | 'POST', path: string, schema: S, options: CallOptions, auth: AuthMode = 'optional', body?: unknown): Promise<z.output<S>> {
    const { body: envelope, requestId } = await this.transport.request({
      method,
      path,
      body,
      auth,
      priority: options.priority ?? 'normal',
      ...signalsOf(options),
    });
    return this.transport.validate(schema, envelope.data, `${method} ${path}`, 'data', requestId);
  }

  private async page<S extends z.ZodType>(path: string, query: Query, item: S, options: ListOptions): Promise<Page<z.output<S>>> {
    const page = options.page ?? 1;
    const limit = options.limit ?? this.pageSize;
    return this.fetchPage(path, query, item, options, { page, limit, offset: (page - 1) * limit });
  }

  private iterate<S extends z.ZodType>(path: string, query: Query, item: S, options: CallOptions): PageIterator<z.output<S>> {
    return new PageIterator((request) => this.fetchPage(path, query, item, options, request), this.pageSize, `GET ${path}`);
  }

  private async fetchPage<S extends z.ZodType>(path: string, query: Query, item: S, options: CallOptions, request: PageRequest): Promise<Page<z.output<S>>> {
    const { page, itemsPath, requestId } = await this.fetchRawPage(path, query, options, request);
    return { ...page, items: page.items.map((it, i) => this.transport.validate(item, it, `GET ${path}`, `${itemsPath}.${i}`, requestId)) };
  }

  /** One page as the server sent it, asked for in the configured paging form. */
  private async fetchRawPage(path: string, query: Query, options: CallOptions, request: PageRequest) {
    const paging = this.paging === 'page' ? { page: request.page, limit: request.limit } : { limit: request.limit, offset: request.offset };
    const { body, requestId } = await this.transport.request({
      method: 'GET',
      path,
      query: { ...query, ...paging },
      auth: 'optional',
      priority: options.priority ?? 'normal',
      ...signalsOf(options),
    });
    const { path: itemsPath, ...page } = this.transport.rawPage(body, `GET ${path}`, requestId, request);
    return { page, itemsPath, requestId };
  }
}

/** What may end a call: its own signal, and the one that ends it only while it waits its turn. */
function signalsOf(options: CallOptions): Pick<CallOptions, 'signal' | 'waitSignal'> {
  return { signal: options.signal, waitSignal: options.waitSignal };
}

function checkBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`base URL is not a URL: ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    // The whole value: `localhost:7420` parses with the scheme "localhost:".
    throw new ConfigError(`base URL must be http(s), got ${JSON.stringify(raw)}`);
  }
  if (url.username || url.password) throw new ConfigError('base URL must not carry credentials');
  if (!hasVersionSegment(url)) throw new ConfigError(`base URL must end in the API's version segment /v1, such as ${url.origin}/v1; got ${JSON.stringify(raw)}`);
  return raw.replace(/\/+$/, '');
}

function seg(indexId: string): string {
  return encodeURIComponent(indexId);
}

function iso(v: Date | string | undefined): string | undefined {
  return v instanceof Date ? v.toISOString() : v;
}

function historyQuery(q: HistoryQuery): Query {
  return { from: iso(q.from), to: iso(q.to), interval: q.interval };
}

function rebalancingQuery(q: RebalancingQuery): Query {
  return { status: q.status, from: iso(q.from), to: iso(q.to) };
}
