import { randomBytes } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import bs58 from 'bs58';
import type { CryptoKey, KeyObject } from 'jose';
import { TIER_LIMITS, type Tier, type TierLimits } from '../contract/index.ts';
import { type ApiKeySpec, type KeyTier, SandboxAuth } from './auth.ts';
import { SimClock } from './clock.ts';
import { type Fault, buildControlRoutes, injectFault, takeFault } from './control.ts';
import { SandboxHttpError } from './errors.ts';
import { Market } from './market.ts';
import { QueryReader } from './query.ts';
import { BucketLimiter, type BucketState } from './rate-limiter.ts';
import { authorize, buildRoutes, match } from './routes.ts';

export interface SandboxOptions {
  /** 0 picks a free port. @default 7420 */
  port?: number | undefined;
  /** @default '127.0.0.1' */
  host?: string | undefined;
  /** Seed of the simulated market. @default 1 */
  seed?: number | undefined;
  /** Simulated seconds per real second; 0 freezes the market. @default 1 */
  speed?: number | undefined;
  /** Simulated time at start (epoch ms). @default now */
  startTime?: number | undefined;
  /** Serve the `/_sandbox` control routes. @default false */
  control?: boolean | undefined;
  /** Length of the rate-limit "minute", shortened for tests. @default 60000 */
  rateWindowMs?: number | undefined;
  /** Enforce rate limits (headers are sent either way). @default true */
  rateLimits?: boolean | undefined;
  /** API keys to accept. @default one demo key per tier, each with every permission */
  apiKeys?: ApiKeySpec[] | undefined;
  /** @default { limit: 5000, burst: 7500 } */
  enterpriseLimits?: TierLimits | undefined;
  /** @default 86400, as the spec says */
  accessTokenTtlSec?: number | undefined;
  /** @default 30 days */
  refreshTokenTtlSec?: number | undefined;
  /** @default 300000 (5 minutes) */
  nonceTtlMs?: number | undefined;
  /** RS256 key pair for access tokens. @default generated at start */
  signingKey?: { privateKey: KeyObject | CryptoKey; publicKey: KeyObject | CryptoKey } | undefined;
  /** The real clock, for token expiry and rate limits. @default Date.now */
  realNow?: (() => number) | undefined;
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

const MAX_BODY = 64 * 1024;

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
