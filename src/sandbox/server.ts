import { randomBytes } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import bs58 from 'bs58';
import type { CryptoKey, KeyObject } from 'jose';
import { HISTORY_INTERVALS, REBALANCE_STATUSES, TIER_LIMITS, type Tier, type TierLimits } from '../contract/index.ts';
import { type ApiKeySpec, type KeyTier, type Principal, SandboxAuth } from './auth.ts';
import { MAX_SPEED, SimClock } from './clock.ts';
import { SandboxHttpError, badParams } from './errors.ts';
import { DAY, HOUR, Market } from './market.ts';
import { QueryReader } from './query.ts';
import { BucketLimiter, type BucketState } from './rate-limiter.ts';
import { compositionRecord, historyPoint, historyTimes, indexRecord, performanceRecord, portfolioRecord, rebalanceRecord, tokenRecord, visibleRebalances } from './records.ts';

export interface SandboxOptions {
  /** 0 picks a free port. @default 7420 */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** Seed of the simulated market. @default 1 */
  seed?: number;
  /** Simulated seconds per real second; 0 freezes the market. @default 1 */
  speed?: number;
  /** Simulated time at start (epoch ms). @default now */
  startTime?: number;
  /** Serve the `/_sandbox` control routes. @default false */
  control?: boolean;
  /** Length of the rate-limit "minute", shortened for tests. @default 60000 */
  rateWindowMs?: number;
  /** Enforce rate limits (headers are sent either way). @default true */
  rateLimits?: boolean;
  /** API keys to accept. @default one demo key per tier, each with every permission */
  apiKeys?: ApiKeySpec[];
  /** @default { limit: 5000, burst: 7500 } */
  enterpriseLimits?: TierLimits;
  /** @default 86400, as the spec says */
  accessTokenTtlSec?: number;
  /** @default 30 days */
  refreshTokenTtlSec?: number;
  /** @default 300000 (5 minutes) */
  nonceTtlMs?: number;
  /** RS256 key pair for access tokens. @default generated at start */
  signingKey?: { privateKey: KeyObject | CryptoKey; publicKey: KeyObject | CryptoKey };
  /** The real clock, for token expiry and rate limits. @default Date.now */
  realNow?: () => number;
}

export interface Sandbox {
  /** The base URL, ending in `/v1`. */
  baseUrl: string;
  /** The server root (control routes live under `/_sandbox`). */
  origin: string;
  /** The demo API key of each tier. */
  keys: Record<KeyTier, string>;
  apiKeys: ApiKeySpec[];
  clock: SimClock;
  market: Market;
  counters(): SandboxCounters;
  /** A credential's rate-limit bucket (labelled as in `counters`), for benchmarks: undefined before its first request. */
  rateBucket(label: string): BucketState | undefined;
  close(): Promise<void>;
}

export interface SandboxCounters {
  total: number;
  /** Requests by route, then by credential label (`key:<name>`, `jwt:<sub>`, `ip:<address>`). */
  byRoute: Record<string, Record<string, number>>;
  /** 429s served, i.e. requests that arrived while their bucket was empty. */
  rateLimited: number;
  rateLimitedByCredential: Record<string, number>;
}

interface Fault {
  kind: 'status' | 'malformed' | 'html' | 'delay' | 'exception';
  status: number;
  remaining: number;
  pathPrefix: string;
  delayMs: number;
}

const FAULT_KINDS: Fault['kind'][] = ['status', 'malformed', 'html', 'delay', 'exception'];

interface Ctx {
  query: QueryReader;
  params: string[];
  principal: Principal | undefined;
  body: unknown;
  now: number;
}

type Result = { data: unknown; pagination?: { page: number; limit: number; total: number }; status?: number };

interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  name: string;
  /** `public`: no credential needed (one given must be valid); `user`: a credential with the permission. */
  access: 'public' | 'user' | 'auth';
  permission?: string;
  handle(ctx: Ctx): Result | Promise<Result>;
}

const MAX_BODY = 64 * 1024;
const ID = '([a-z0-9][a-z0-9-]{0,63})';

const DEFAULT_PERMISSIONS = ['read:index', 'read:portfolio', 'write:transactions'];

/** Starts the sandbox: the API contract over a simulated market, on 127.0.0.1 unless told otherwise. */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const host = options.host ?? '127.0.0.1';
  const realNow = options.realNow ?? Date.now;
  const clock = new SimClock(options.startTime ?? realNow(), options.speed ?? 1, realNow);
  const market = new Market(options.seed ?? 1);
  const apiKeys = options.apiKeys ?? (['basic', 'premium', 'enterprise'] as const).map((tier) => demoKey(tier));
  const enterprise = options.enterpriseLimits ?? { limit: 5000, burst: 7500 };
  const limiter = new BucketLimiter(options.rateWindowMs ?? 60_000, realNow, options.rateLimits ?? true);
  const counters: SandboxCounters = { total: 0, byRoute: {}, rateLimited: 0, rateLimitedByCredential: {} };
  const faults: Fault[] = [];
  let requestCount = 0;

  // The handler is attached before the port opens, and a request that arrives while the
  // signing key is still being generated waits for it instead of going unanswered.
  let serve: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const early: [IncomingMessage, ServerResponse][] = [];
  const server: Server = createServer((req, res) => (serve ? serve(req, res) : early.push([req, res])));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 7420, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const baseUrl = `${origin}/v1`;
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  const auth = await SandboxAuth.create({
    keys: apiKeys,
    baseUrl,
    accessTokenTtlSec: options.accessTokenTtlSec ?? 86_400,
    refreshTokenTtlSec: options.refreshTokenTtlSec ?? 30 * 86_400,
    nonceTtlMs: options.nonceTtlMs ?? 300_000,
    now: realNow,
    signingKey: options.signingKey,
  }).catch(async (e: unknown) => {
    await close();
    throw e;
  });

  const limitsOf = (tier: Tier): TierLimits => (tier === 'enterprise' ? enterprise : TIER_LIMITS[tier]);
  const routes = buildRoutes(market, auth);
  const controlRoutes = buildControlRoutes({ market, clock, auth, counters: () => snapshot(counters), faults });

  serve = (req: IncomingMessage, res: ServerResponse) => {
    const requestId = `req_${(++requestCount).toString(36).padStart(8, '0')}`;
    const headers: Record<string, string> = { 'X-Request-Id': requestId };
    const now = clock.now();
    const send = (status: number, body: unknown) => {
      if (res.headersSent) return;
      const text = JSON.stringify(body);
      res.writeHead(status, { ...headers, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    };
    const fail = (e: unknown) => {
      const err = e instanceof SandboxHttpError ? e : new SandboxHttpError(500, 'INTERNAL_ERROR', 'internal error');
      Object.assign(headers, err.extra.headers);
      if (err.status === 413) {
        headers.Connection = 'close';
        res.once('finish', () => req.destroy());
      }
      const error: Record<string, unknown> = { code: err.code, message: err.message };
      if (err.extra.reason) error.reason = err.extra.reason;
      if (err.extra.details) error.details = err.extra.details;
      send(err.status, { success: false, error, meta: { timestamp: new Date(now).toISOString(), request_id: requestId } });
    };
    handle().catch(fail);

    async function handle(): Promise<void> {
      const url = new URL(req.url ?? '/', 'http://sandbox');
      const path = url.pathname;
      if (path.startsWith('/_sandbox/') && options.control) {
        const route = match(controlRoutes, req.method, path.slice('/_sandbox'.length));
        if (!route) throw notFound();
        const body = route.route.method === 'POST' ? await readJson(req) : undefined;
        const result = await route.route.handle({ query: new QueryReader(url.searchParams), params: route.params, principal: undefined, body, now });
        return send(result.status ?? 200, { success: true, data: result.data, meta: { timestamp: new Date(clock.now()).toISOString(), request_id: requestId } });
      }
      if (!path.startsWith('/v1/')) throw notFound();
      const apiPath = path.slice(3);
      const { principal, failure, bucket, tier } = await auth.identify(req.headers.authorization, `ip:${req.socket.remoteAddress ?? 'unknown'}`);
      const decision = limiter.take(bucket, limitsOf(tier));
      Object.assign(headers, decision.headers);
      const found = match(routes, req.method, apiPath);
      const routeName = found?.route.name ?? 'unmatched';
      counters.total++;
      const perRoute = (counters.byRoute[routeName] ??= {});
      perRoute[bucket] = (perRoute[bucket] ?? 0) + 1;
      if (!decision.allowed) {
        counters.rateLimited++;
        counters.rateLimitedByCredential[bucket] = (counters.rateLimitedByCredential[bucket] ?? 0) + 1;
        throw new SandboxHttpError(429, 'RATE_LIMIT_EXCEEDED', `rate limit exceeded; retry after ${decision.headers['Retry-After']} s`);
      }
      if (failure) throw failure;
      if (!found) throw notFound();
      const { route, params } = found;
      authorize(route, principal, apiPath);
      const fault = takeFault(faults, apiPath);
      if (fault) return injectFault(fault, res, headers, requestId);
      const body = route.method === 'POST' ? await readJson(req) : undefined;
      const result = await route.handle({ query: new QueryReader(url.searchParams), params, principal, body, now });
      const meta: Record<string, unknown> = { timestamp: new Date(now).toISOString(), request_id: requestId };
      if (result.pagination) meta.pagination = result.pagination;
      send(result.status ?? 200, { success: true, data: result.data, meta });
    }
  };
  for (const [req, res] of early.splice(0)) serve(req, res);

  return {
    baseUrl,
    origin,
    keys: Object.fromEntries(apiKeys.filter((k) => k.name === `demo-${k.tier}`).map((k) => [k.tier, k.key])) as Record<KeyTier, string>,
    apiKeys,
    clock,
    market,
    counters: () => snapshot(counters),
    rateBucket: (label) => limiter.state(label),
    close,
  };
}

/** A demo key with every permission, as the dashboard would create it. */
export function demoKey(tier: KeyTier, overrides: Partial<ApiKeySpec> = {}): ApiKeySpec {
  return { key: `sk_sandbox_${tier}_${bs58.encode(randomBytes(18))}`, name: `demo-${tier}`, tier, permissions: DEFAULT_PERMISSIONS, ...overrides };
}

function snapshot(c: SandboxCounters): SandboxCounters {
  return structuredClone(c);
}

function notFound(): SandboxHttpError {
  return new SandboxHttpError(404, 'RESOURCE_NOT_FOUND', 'no such route');
}

function match(routes: Route[], method: string | undefined, path: string): { route: Route; params: string[] } | undefined {
  for (const route of routes) {
    const m = route.pattern.exec(path);
    if (m && route.method === method) return { route, params: m.slice(1) };
  }
  return undefined;
}

function authorize(route: Route, principal: Principal | undefined, path: string): void {
  if (route.access === 'auth') return;
  if (!principal) {
    if (route.access === 'public') return;
    throw new SandboxHttpError(401, 'INVALID_API_KEY', 'this endpoint needs an API key or an access token', { reason: 'missing_credentials' });
  }
  if (route.permission && !principal.permissions.includes(route.permission)) {
    throw new SandboxHttpError(403, 'FORBIDDEN', `the credential lacks the permission ${route.permission}`);
  }
  if (principal.scopes && !principal.scopes.some((s) => globMatch(s, path))) {
    throw new SandboxHttpError(403, 'FORBIDDEN', 'the credential is not scoped to this endpoint');
  }
}

function globMatch(pattern: string, path: string): boolean {
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return re.test(path);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY) throw new SandboxHttpError(413, 'INVALID_PARAMETER', `request body over ${MAX_BODY} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new SandboxHttpError(413, 'INVALID_PARAMETER', `request body over ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return {};
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new SandboxHttpError(400, 'INVALID_PARAMETER', 'request body is not valid JSON', { details: [{ param: 'body', issue: 'malformed JSON' }] });
  }
}

function takeFault(faults: Fault[], path: string): Fault | undefined {
  const fault = faults.find((f) => f.remaining > 0 && path.startsWith(f.pathPrefix));
  if (!fault) return undefined;
  fault.remaining--;
  if (fault.remaining === 0) faults.splice(faults.indexOf(fault), 1);
  return fault;
}

function injectFault(fault: Fault, res: ServerResponse, headers: Record<string, string>, requestId: string): void {
  const write = (status: number, type: string, body: string) => {
    res.writeHead(status, { ...headers, 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };
  if (fault.kind === 'exception') throw new Error('injected handler exception');
  if (fault.kind === 'malformed') {
    write(200, 'application/json', '{"success": true, "data": {"index_id": ');
    return;
  }
  if (fault.kind === 'html') {
    write(fault.status, 'text/html', '<html><body><h1>502 Bad Gateway</h1></body></html>');
    return;
  }
  if (fault.kind === 'delay') {
    setTimeout(() => write(503, 'application/json', '{}'), fault.delayMs).unref();
    return;
  }
  const body = JSON.stringify({
    success: false,
    error: { code: fault.status === 503 ? 'SERVICE_UNAVAILABLE' : 'INTERNAL_ERROR', message: 'injected fault' },
    meta: { timestamp: new Date().toISOString(), request_id: requestId },
  });
  write(fault.status, 'application/json; charset=utf-8', body);
}

function paged<T>(query: QueryReader, total: number, item: (i: number) => T): Result {
  const { offset, page, limit } = query.paging();
  query.done();
  const end = Math.min(total, offset + limit);
  const data: T[] = [];
  for (let i = offset; i < end; i++) data.push(item(i));
  return { data, pagination: { page, limit, total } };
}

function buildRoutes(market: Market, auth: SandboxAuth): Route[] {
  const indexAt = (ctx: Ctx) => {
    market.advance(ctx.now);
    const index = market.index(ctx.params[0]!, ctx.now);
    if (!index) throw new SandboxHttpError(404, 'RESOURCE_NOT_FOUND', `no index ${ctx.params[0]}`);
    return index;
  };
  const noQuery = (ctx: Ctx) => ctx.query.done();
  return [
    {
      method: 'GET',
      pattern: /^\/indexes$/,
      name: 'GET /indexes',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => {
        market.advance(ctx.now);
        const listed = market.listed(ctx.now);
        return paged(ctx.query, listed.length, (i) => indexRecord(market, listed[i]!, ctx.now, false));
      },
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/indexes/${ID}$`),
      name: 'GET /indexes/{id}',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => {
        noQuery(ctx);
        return { data: indexRecord(market, indexAt(ctx), ctx.now, true) };
      },
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/indexes/${ID}/composition$`),
      name: 'GET /indexes/{id}/composition',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => ({ data: compositionRecord(market, indexAt(ctx), ctx.now) }),
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/indexes/${ID}/performance$`),
      name: 'GET /indexes/{id}/performance',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => ({ data: performanceRecord(indexAt(ctx), ctx.now) }),
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/indexes/${ID}/history$`),
      name: 'GET /indexes/{id}/history',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => {
        const index = indexAt(ctx);
        const q = ctx.query;
        const to = q.timestamp('to') ?? ctx.now;
        const from = q.timestamp('from') ?? to - 30 * DAY;
        const interval = q.oneOf('interval', HISTORY_INTERVALS) ?? '1d';
        if (q.issues.length === 0 && from > to) q.issues.push({ param: 'from', issue: 'must not be after to' });
        const step = interval === '1h' ? HOUR : DAY;
        const { first, count } = historyTimes(index, from, to, step, ctx.now);
        return paged(q, count, (i) => historyPoint(market, index, first + i * step));
      },
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/indexes/${ID}/rebalancing$`),
      name: 'GET /indexes/{id}/rebalancing',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => {
        const index = indexAt(ctx);
        const q = ctx.query;
        const status = q.oneOf('status', REBALANCE_STATUSES);
        const from = q.timestamp('from');
        const to = q.timestamp('to');
        if (from !== undefined && to !== undefined && from > to) q.issues.push({ param: 'from', issue: 'must not be after to' });
        const records = visibleRebalances(index, ctx.now)
          .filter((e) => (from === undefined || e.announcedAt >= from) && (to === undefined || e.announcedAt <= to))
          .map((e) => rebalanceRecord(e, ctx.now))
          .filter((r) => status === undefined || r.status === status);
        return paged(q, records.length, (i) => records[i]);
      },
    },
    {
      method: 'GET',
      pattern: /^\/tokens$/,
      name: 'GET /tokens',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => paged(ctx.query, market.tokens.length, (i) => tokenRecord(market, i, ctx.now)),
    },
    {
      method: 'GET',
      pattern: /^\/user\/portfolio$/,
      name: 'GET /user/portfolio',
      access: 'user',
      permission: 'read:portfolio',
      handle: (ctx) => {
        noQuery(ctx);
        market.advance(ctx.now);
        return { data: portfolioRecord(market, ctx.principal!.wallet, ctx.now) };
      },
    },
    { method: 'POST', pattern: /^\/auth\/challenge$/, name: 'POST /auth/challenge', access: 'auth', handle: (ctx) => ({ data: auth.challenge(ctx.body) }) },
    { method: 'POST', pattern: /^\/auth\/wallet$/, name: 'POST /auth/wallet', access: 'auth', handle: async (ctx) => ({ data: await auth.signIn(ctx.body) }) },
    { method: 'POST', pattern: /^\/auth\/refresh$/, name: 'POST /auth/refresh', access: 'auth', handle: async (ctx) => ({ data: await auth.refresh(ctx.body) }) },
  ];
}

interface ControlDeps {
  market: Market;
  clock: SimClock;
  auth: SandboxAuth;
  counters: () => SandboxCounters;
  faults: Fault[];
}

function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
}

/** Ten simulated years: the most one control call may move the clock or schedule ahead. */
const MAX_CONTROL_SECONDS = 10 * 365 * 86_400;

function numberField(body: unknown, name: string, fallback?: number, max = MAX_CONTROL_SECONDS): number {
  const v = field(body, name) ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > max) throw badParams([{ param: name, issue: `must be a number from 0 to ${max}` }]);
  return v;
}

function stringField(body: unknown, name: string): string {
  const v = field(body, name);
  if (typeof v !== 'string' || v === '') throw badParams([{ param: name, issue: 'required string' }]);
  return v;
}

/** The `/_sandbox` routes: for demos and tests, only with `control: true`. */
function buildControlRoutes(d: ControlDeps): Route[] {
  const clockState = () => ({ now: new Date(d.clock.now()).toISOString(), speed: d.clock.currentSpeed });
  const indexOf = (body: unknown) => {
    const id = stringField(body, 'index_id');
    const index = d.market.index(id, d.clock.now());
    if (!index) throw new SandboxHttpError(404, 'RESOURCE_NOT_FOUND', `no index ${id}`);
    return index;
  };
  return [
    { method: 'GET', pattern: /^\/counters$/, name: 'counters', access: 'auth', handle: () => ({ data: d.counters() }) },
    { method: 'GET', pattern: /^\/clock$/, name: 'clock', access: 'auth', handle: () => ({ data: clockState() }) },
    {
      method: 'POST',
      pattern: /^\/clock$/,
      name: 'clock',
      access: 'auth',
      handle: (ctx) => {
        if (field(ctx.body, 'advance_seconds') !== undefined) d.clock.advance(numberField(ctx.body, 'advance_seconds') * 1000);
        if (field(ctx.body, 'speed') !== undefined) d.clock.setSpeed(numberField(ctx.body, 'speed', undefined, MAX_SPEED));
        d.market.advance(d.clock.now());
        return { data: clockState() };
      },
    },
    {
      method: 'POST',
      pattern: /^\/rebalance$/,
      name: 'rebalance',
      access: 'auth',
      handle: (ctx) => {
        const index = indexOf(ctx.body);
        const inSeconds = numberField(ctx.body, 'effective_in_seconds', 60);
        const now = d.clock.now();
        return { data: rebalanceRecord(index.trigger(now, inSeconds * 1000), now), status: 201 };
      },
    },
    {
      method: 'POST',
      pattern: /^\/rebalance\/cancel$/,
      name: 'rebalance.cancel',
      access: 'auth',
      handle: (ctx) => {
        const index = indexOf(ctx.body);
        const now = d.clock.now();
        const event = index.cancel(stringField(ctx.body, 'rebalance_id'), now);
        if (!event) throw new SandboxHttpError(404, 'RESOURCE_NOT_FOUND', 'no announced rebalance with that id');
        return { data: rebalanceRecord(event, now) };
      },
    },
    {
      method: 'POST',
      pattern: /^\/expire-token$/,
      name: 'expire-token',
      access: 'auth',
      handle: (ctx) => {
        const accessToken = field(ctx.body, 'access_token');
        const wallet = field(ctx.body, 'wallet');
        const expired = d.auth.expireAccessTokens({
          accessToken: typeof accessToken === 'string' ? accessToken : undefined,
          wallet: typeof wallet === 'string' ? wallet : undefined,
        });
        return { data: { expired } };
      },
    },
    {
      method: 'POST',
      pattern: /^\/revoke-key$/,
      name: 'revoke-key',
      access: 'auth',
      handle: (ctx) => {
        if (!d.auth.revokeKey(stringField(ctx.body, 'key'))) throw new SandboxHttpError(404, 'RESOURCE_NOT_FOUND', 'no such key');
        return { data: { revoked: true } };
      },
    },
    {
      method: 'POST',
      pattern: /^\/faults$/,
      name: 'faults',
      access: 'auth',
      handle: (ctx) => {
        const kind = field(ctx.body, 'kind') ?? 'status';
        if (!FAULT_KINDS.includes(kind as Fault['kind'])) throw badParams([{ param: 'kind', issue: `must be one of ${FAULT_KINDS.join(', ')}` }]);
        const fault: Fault = {
          kind: kind as Fault['kind'],
          status: numberField(ctx.body, 'status', kind === 'html' ? 502 : 503, 599),
          remaining: numberField(ctx.body, 'count', 1, 1_000_000),
          pathPrefix: typeof field(ctx.body, 'path_prefix') === 'string' ? (field(ctx.body, 'path_prefix') as string) : '/',
          delayMs: numberField(ctx.body, 'delay_ms', 0, 600_000),
        };
        if (fault.remaining > 0) d.faults.push(fault);
        return { data: { queued: d.faults.length } };
      },
    },
  ];
}
