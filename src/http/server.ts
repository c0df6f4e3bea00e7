import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpConfig } from '../config/index.ts';
import { type Logger, StrategyError, listenFailure } from '../core/index.ts';
import { EVENT_TYPES, type EventType } from '../detect/events.ts';
import type { RateGateState } from '../ratelimit/index.ts';
import type { SnapshotStore } from '../store/index.ts';
import { lastHeartbeat } from '../stream/index.ts';
import { bearerCheck, hostIsLoopback, isCrossSite } from './auth.ts';
import { API_CSP, dashboardPage } from './dashboard.ts';
import type { DaemonMetrics } from './metrics.ts';
import { type StatusReport, equityCurve, eventsPage, indexesOverview, recentFills } from './queries.ts';
import { type EventStream, STREAM_HEADERS } from './stream.ts';

/** What the HTTP face reads and steers: the daemon's queries and the runtime's control methods, nothing else. */
export interface BotControl {
  store: SnapshotStore;
  indexes: string[];
  /** The same report `indexbot status --json` prints. */
  status(): StatusReport & Record<string, unknown>;
  /** Its strategies part alone (paper accounts at the latest cached prices), cheaper to read often. */
  strategyBooks(): StatusReport['strategies'];
  /** The rate gates as they are now (status holds the last 5-second report). */
  gates(): RateGateState[];
  /** The strategies' clock (the sandbox's simulated one in the demo). */
  marketNow(): number;
  strategies: {
    names: string[];
    paused(): string[];
    pause(name: string): boolean;
    resume(name: string): boolean;
    retryParked(name?: string): Promise<number>;
  };
  sendTestAlert(): Promise<{ sink: string; ok: boolean; reason?: string }[]>;
}

export interface HttpServerOptions {
  config: HttpConfig;
  metrics: DaemonMetrics;
  stream: EventStream;
  logger: Logger;
}

const MAX_BODY_BYTES = 16 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

type Handler = (req: IncomingMessage, res: ServerResponse, url: URL, params: string[]) => unknown;
interface Route {
  method: 'GET' | 'POST';
  /** For logs: the pattern, never the raw path. */
  name: string;
  pattern: RegExp;
  handler: Handler;
}

/**
 * The daemon's HTTP face on node:http: a dozen routes need no framework, and node:http lets the
 * server bound what each connection may cost (header and request timeouts, a connection cap,
 * a body limit, dropping SSE clients that stop reading) so that no client can slow the poller.
 */
export class HttpServer {
  private readonly server: Server;
  /** Defined once the pipeline runs (`serve`); the port is taken before, so a busy one stops the start early. */
  private routes: Route[] | undefined;

  constructor(private readonly o: HttpServerOptions) {
    this.server = createServer({ headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000 }, (req, res) => this.handle(req, res));
    this.server.maxConnections = o.config.maxConnections;
  }

  /** Starts listening; resolves with the URL it serves on. */
  async listen(): Promise<string> {
    const { host, port, source, fromFlag } = this.o.config;
    await new Promise<void>((resolve, reject) => {
      const refused = (e: unknown) => reject(listenFailure(e, host, port, { port: source, host: source, fromFlag }));
      this.server.once('error', refused);
      this.server.listen(port, host, () => {
        this.server.off('error', refused);
        resolve();
      });
    });
    const a = this.server.address() as AddressInfo;
    return `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
  }

  /** Answers every route from now on; until then all but /healthz answer 503. */
  serve(control: BotControl): void {
    this.routes = this.defineRoutes(control);
  }

  async close(): Promise<void> {
    this.o.stream.close();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const url = new URL(req.url ?? '/', 'http://localhost');
    let route = 'unmatched';
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Content-Security-Policy', API_CSP);
    try {
      if (url.pathname === '/favicon.ico') {
        route = '/favicon.ico';
        res.writeHead(204).end();
        return;
      }
      if (url.pathname === '/healthz') {
        route = '/healthz';
        return json(res, 200, { ok: true });
      }
      const { token } = this.o.config;
      // Without a token, only loopback names: a rebound domain pointing at us is refused.
      if (token === undefined && !hostIsLoopback(req)) throw new HttpError(403, 'this server answers loopback names only; set http.token to serve others');
      // HEAD is GET without the body (Node sends none): an uptime check by HEAD sees what GET gets (trial 30: 401 for the page GET served).
      const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
      if (url.pathname === '/' && method === 'GET') {
        route = '/';
        const page = dashboardPage();
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': page.csp });
        res.end(page.html);
        return;
      }
      const bearer = token === undefined ? 'ok' : bearerCheck(req, token);
      // As RFC 6750 answers: a wrong token is told apart from none, so a client knows to fix it rather than add one.
      if (bearer === 'missing') throw new HttpError(401, 'a bearer token is required', { 'WWW-Authenticate': 'Bearer realm="indexbot"' });
      if (bearer === 'wrong') throw new HttpError(401, 'the bearer token is not the one configured (http.token)', { 'WWW-Authenticate': 'Bearer realm="indexbot", error="invalid_token"' });
      if (!this.routes) throw new HttpError(503, 'starting', { 'Retry-After': '1' });
      const match = this.match(this.routes, method, url.pathname);
      route = match.route.name;
      if (match.route.method === 'POST') {
        if (isCrossSite(req)) throw new HttpError(403, 'cross-site requests are refused');
        if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) throw new HttpError(415, 'send Content-Type: application/json');
        await readBody(req);
      }
      await match.route.handler(req, res, url, match.params);
    } catch (e) {
      if (res.headersSent) {
        res.destroy();
      } else if (e instanceof HttpError) {
        json(res, e.status, { error: e.message }, e.headers);
      } else if (e instanceof StrategyError && e.code === 'STRATEGY_UNKNOWN') {
        json(res, 404, { error: e.message });
      } else {
        this.o.logger.error({ route, error: e instanceof Error ? e.message : String(e) }, 'http handler failed');
        json(res, 500, { error: 'internal error; see the bot log' });
      }
    } finally {
      // The path only: a query string is never logged, and neither is any header.
      this.o.logger.debug({ method: req.method, route, status: res.statusCode, durationMs: Math.round(performance.now() - started) }, 'http request');
    }
  }

  private match(routes: Route[], method: string, path: string): { route: Route; params: string[] } {
    let allowed: string[] = [];
    for (const route of routes) {
      const m = route.pattern.exec(path);
      if (!m) continue;
      if (route.method === method) return { route, params: m.slice(1).map(decodeURIComponent) };
      // HEAD is answered wherever GET is.
      allowed = [...allowed, ...(route.method === 'GET' ? ['GET', 'HEAD'] : [route.method])];
    }
    if (allowed.length > 0) throw new HttpError(405, `use ${allowed.join(' or ')}`, { Allow: allowed.join(', ') });
    throw new HttpError(404, 'no such route');
  }

  private defineRoutes(c: BotControl): Route[] {
    const get = (name: string, pattern: RegExp, handler: Handler): Route => ({ method: 'GET', name, pattern, handler });
    const post = (name: string, pattern: RegExp, handler: Handler): Route => ({ method: 'POST', name, pattern, handler });
    const strategy = (name: string) => {
      if (!c.strategies.names.includes(name)) throw new HttpError(404, `no strategy named ${JSON.stringify(name)} is running`);
      return name;
    };
    return [
      get('/readyz', /^\/readyz$/, (_req, res) => {
        const now = Date.now();
        // A daemon's or collector's last successful poll; a runner's (which polls nothing) last answered read of the event stream.
        const beat = lastHeartbeat(c.store);
        const ageS = beat === null ? null : Math.round((now - beat.at) / 1000);
        let writable = true;
        try {
          c.store.setRuntime('readyz', { at: now }, now);
        } catch {
          writable = false;
        }
        const fresh = ageS !== null && ageS <= this.o.config.readyMaxAgeS;
        const age = beat?.source === 'stream' ? { lastStreamReadAgeS: ageS } : { lastSuccessfulPollAgeS: ageS };
        json(res, fresh && writable ? 200 : 503, { ready: fresh && writable, ...age, maxAgeS: this.o.config.readyMaxAgeS, storeWritable: writable });
      }),
      get('/metrics', /^\/metrics$/, async (_req, res) => {
        const text = await this.o.metrics.render();
        res.writeHead(200, { 'Content-Type': this.o.metrics.registry.contentType });
        res.end(text);
      }),
      get('/api/v1/status', /^\/api\/v1\/status$/, (_req, res) => json(res, 200, { ...c.status(), rateGates: c.gates(), paused: c.strategies.paused() })),
      get('/api/v1/indexes', /^\/api\/v1\/indexes$/, (_req, res) => json(res, 200, { indexes: indexesOverview(c.store, c.indexes, Date.now(), c.marketNow()) })),
      get('/api/v1/events', /^\/api\/v1\/events$/, (_req, res, url) => {
        const limit = intParam(url, 'limit', 1, 500, 100);
        const latest = url.searchParams.get('latest') === '1';
        const since = latest ? Math.max(0, c.store.lastEventSeq() - limit) : intParam(url, 'since', 0, Number.MAX_SAFE_INTEGER, 0);
        const type = url.searchParams.get('type') ?? undefined;
        if (type !== undefined && !EVENT_TYPES.includes(type as EventType)) throw new HttpError(400, `type: expected one of ${EVENT_TYPES.join(', ')}, got ${JSON.stringify(type)}`);
        const index = url.searchParams.get('index') ?? undefined;
        if (index !== undefined && !/^[a-z0-9][a-z0-9-]{0,63}$/.test(index)) throw new HttpError(400, `index: expected an index id, got ${JSON.stringify(index)}`);
        json(res, 200, eventsPage(c.store, { since, type: type as EventType | undefined, index, limit }));
      }),
      get('/api/v1/stream', /^\/api\/v1\/stream$/, (req, res, url) => {
        const lastId = req.headers['last-event-id'];
        if (typeof lastId === 'string' && !(/^\d+$/.test(lastId) && Number.isSafeInteger(Number(lastId))))
          throw new HttpError(400, `Last-Event-ID: expected a whole number (the seq of the last event received), got ${JSON.stringify(lastId)}`);
        const since = typeof lastId === 'string' ? Number(lastId) : url.searchParams.has('since') ? intParam(url, 'since', 0, Number.MAX_SAFE_INTEGER, 0) : undefined;
        // A HEAD gets the stream's headers, not a connection held open for a body it will never read.
        if (req.method === 'HEAD') return void res.writeHead(200, STREAM_HEADERS).end();
        this.o.stream.attach(res, since, (after) => c.store.eventsAfter(after, 500));
      }),
      get('/api/v1/strategies', /^\/api\/v1\/strategies$/, (_req, res) => {
        const paused = new Set(c.strategies.paused());
        const parked = c.store.strategies.parked();
        const strategies = c
          .strategyBooks()
          .filter((s) => c.strategies.names.includes(s.strategy))
          .map((s) => ({ ...s, paused: paused.has(s.strategy), parked: parked.filter((p) => p.strategy === s.strategy), recentFills: recentFills(c.store, s.strategy, 20) }));
        json(res, 200, { strategies });
      }),
      get('/api/v1/strategies/:name/equity', /^\/api\/v1\/strategies\/([^/]+)\/equity$/, (_req, res, _url, [name]) => {
        json(res, 200, { strategy: strategy(name!), points: equityCurve(c.store, name!, c.marketNow()) });
      }),
      get('/api/v1/alerts/outbox', /^\/api\/v1\/alerts\/outbox$/, (_req, res) => {
        json(res, 200, { sinks: c.status().alerts.map((a) => ({ ...a, head: c.store.outbox.pending(a.sink, 20) })) });
      }),
      post('/api/v1/strategies/:name/pause', /^\/api\/v1\/strategies\/([^/]+)\/pause$/, (_req, res, _url, [name]) => {
        json(res, 200, { strategy: name, paused: true, changed: c.strategies.pause(strategy(name!)) });
      }),
      post('/api/v1/strategies/:name/resume', /^\/api\/v1\/strategies\/([^/]+)\/resume$/, (_req, res, _url, [name]) => {
        json(res, 200, { strategy: name, paused: false, changed: c.strategies.resume(strategy(name!)) });
      }),
      post('/api/v1/strategies/:name/retry', /^\/api\/v1\/strategies\/([^/]+)\/retry$/, async (_req, res, _url, [name]) => {
        const delivered = await c.strategies.retryParked(strategy(name!));
        // What failed again stays parked: said, as the CLI's retry says it.
        json(res, 200, { strategy: name, delivered, stillParked: c.store.strategies.parked(name!).length });
      }),
      post('/api/v1/alerts/test', /^\/api\/v1\/alerts\/test$/, async (_req, res) => json(res, 200, { sinks: await c.sendTestAlert() })),
    ];
  }
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

function intParam(url: URL, name: string, min: number, max: number, fallback: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) throw new HttpError(400, `${name}: expected a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

/** Control routes take no body worth reading, but one is drained (up to a limit) so the connection can be reused. */
async function readBody(req: IncomingMessage): Promise<void> {
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `body over ${MAX_BODY_BYTES} bytes`);
  }
}
