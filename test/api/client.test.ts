import { inspect } from 'node:util';
import { getEventListeners } from 'node:events';
import { AxiosError } from 'axios';
import { describe, expect, it } from 'vitest';
import { IndexClient, type IndexClientOptions } from '../../src/api/index.ts';
import {
  AuthError,
  BadRequestError,
  ConfigError,
  ForbiddenError,
  MalformedResponseError,
  ManualClock,
  NotFoundError,
  RateLimitError,
  ResponseValidationError,
  ServerError,
} from '../../src/core/index.ts';
import { captureLogger, envelope, errorBody, type FakeResponse, fakeTransport, type RecordedRequest } from '../helpers/fake-transport.ts';

const BASE = 'http://api.test/v1';

function client(handler: (req: RecordedRequest, n: number) => FakeResponse | Promise<FakeResponse>, options: Partial<IndexClientOptions> = {}) {
  const fake = fakeTransport(handler, options.clock);
  const c = new IndexClient({ baseUrl: BASE, adapter: fake.adapter, random: () => 0, retryBaseMs: 1, ...options });
  return { c, log: fake.log };
}

const token = (i: number) => ({
  address: `Addr${i}`,
  symbol: `T${i}`,
  name: `Token ${i}`,
  decimals: 9,
  price_usd: i,
  market_cap_usd: i * 1000,
  volume_24h_usd: 1,
  change_24h: 0,
  updated_at: '2026-11-22T10:00:00.000Z',
});

describe('pagination', () => {
  it('walks page/limit pages to the total and never asks past it', async () => {
    const all = Array.from({ length: 25 }, (_, i) => token(i));
    const { c, log } = client(
      (req) => {
        const page = Number(req.query.page);
        const limit = Number(req.query.limit);
        return { body: envelope(all.slice((page - 1) * limit, page * limit), { pagination: { page, limit, total: 25 } }) };
      },
      { pageSize: 10 },
    );
    const got = await c.iterateTokens().toArray();
    expect(got.map((t) => t.symbol)).toEqual(all.map((t) => t.symbol));
    expect(log.map((r) => r.query)).toEqual([
      { page: 1, limit: 10 },
      { page: 2, limit: 10 },
      { page: 3, limit: 10 },
    ]);
  });

  it('stops after the last full page when the total divides evenly', async () => {
    const { c, log } = client(
      (req) => ({
        body: envelope(
          Array.from({ length: 10 }, (_, i) => token(i + (Number(req.query.page) - 1) * 10)),
          {
            pagination: { page: req.query.page, limit: 10, total: 20 },
          },
        ),
      }),
      { pageSize: 10 },
    );
    expect(await c.iterateTokens().toArray()).toHaveLength(20);
    expect(log).toHaveLength(2);
  });

  it('understands limit/offset paging, data.items and a top-level total', async () => {
    const all = Array.from({ length: 23 }, (_, i) => token(i));
    const { c, log } = client(
      (req) => {
        const offset = Number(req.query.offset);
        const limit = Number(req.query.limit);
        return { body: { success: true, data: { items: all.slice(offset, offset + limit) }, total: 23, count: Math.min(limit, 23 - offset) } };
      },
      { paging: 'offset', pageSize: 10 },
    );
    const pages = [];
    for await (const page of c.iterateTokens().pages()) pages.push(page.items.length);
    expect(pages).toEqual([10, 10, 3]);
    expect(log.map((r) => r.query)).toEqual([
      { limit: 10, offset: 0 },
      { limit: 10, offset: 10 },
      { limit: 10, offset: 20 },
    ]);
  });

  it('stops at a short page when the server sends no total', async () => {
    const { c, log } = client((req) => ({ body: envelope(Number(req.query.page) === 1 ? [token(1), token(2)] : [token(3)]) }), { pageSize: 2 });
    expect(await c.iterateTokens().toArray()).toHaveLength(3);
    expect(log).toHaveLength(2);
  });

  it('passes history and rebalancing filters as query parameters', async () => {
    const { c, log } = client(() => ({ body: envelope([], { pagination: { page: 1, limit: 100, total: 0 } }) }));
    await c.iterateHistory('sindex', { from: new Date('2026-01-01T00:00:00Z'), to: '2026-02-01T00:00:00.000Z', interval: '1h' }).toArray();
    await c.listRebalancing('sindex', { status: 'announced' }, { page: 2, limit: 5 });
    expect(log[0]).toMatchObject({ path: '/indexes/sindex/history', query: { from: '2026-01-01T00:00:00.000Z', to: '2026-02-01T00:00:00.000Z', interval: '1h', page: 1, limit: 100 } });
    expect(log[1]).toMatchObject({ path: '/indexes/sindex/rebalancing', query: { status: 'announced', page: 2, limit: 5 } });
  });
});

const composition = (constituents: unknown[]) => envelope({ index_id: 'sindex', as_of: '2026-11-22T10:00:00.000Z', rebalance_id: 'rb_1', constituents });
const constituent = (symbol: string, weight: unknown) => ({ address: `A${symbol}`, symbol, name: symbol, weight, target_weight: 0.5, price_usd: 1, units: 1, value_usd: 1 });

describe('validation', () => {
  it('keeps fields the contract does not know', async () => {
    const { c } = client(() => ({ body: composition([{ ...constituent('SOL', 0.5), liquidity_score: 7 }, constituent('JUP', 0.5)]) }));
    const comp = await c.getComposition('sindex');
    expect((comp.constituents[0] as Record<string, unknown>).liquidity_score).toBe(7);
  });

  it('rejects a missing or mistyped field, naming the endpoint and the field path', async () => {
    const { c } = client(() => ({ body: composition([constituent('SOL', 0.5), constituent('JUP', 'half')]) }));
    const err = await c.getComposition('sindex').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseValidationError);
    const v = err as ResponseValidationError;
    expect(v.code).toBe('RESPONSE_INVALID');
    expect(v.endpoint).toBe('GET /indexes/sindex/composition');
    expect(v.issues.map((i) => i.path)).toEqual(['data.constituents.1.weight']);
    expect(v.message).toContain('data.constituents.1.weight');
    expect(v.requestId).toBe('req_test');
  });

  it('rejects a composition that lists the same token twice', async () => {
    const { c } = client(() => ({ body: composition([constituent('SOL', 0.5), constituent('SOL', 0.5)]) }));
    const err = (await c.getComposition('sindex').catch((e: unknown) => e)) as ResponseValidationError;
    expect(err).toBeInstanceOf(ResponseValidationError);
    expect(err.issues).toEqual([{ path: 'data.constituents.1.address', message: 'the same token is listed twice' }]);
  });

  it('names the item of a list that is wrong', async () => {
    const bad = { ...token(2) } as Record<string, unknown>;
    delete bad.price_usd;
    const { c } = client(() => ({ body: envelope([token(1), bad], { pagination: { page: 1, limit: 10, total: 2 } }) }));
    const err = (await c.listTokens().catch((e: unknown) => e)) as ResponseValidationError;
    expect(err.issues[0]!.path).toBe('data.1.price_usd');
  });

  it('passes an unknown enum value through and warns once', async () => {
    const { logger, lines } = captureLogger();
    const record = {
      id: 'rb_1',
      index_id: 'sindex',
      status: 'postponed',
      announced_at: '2026-11-22T10:00:00.000Z',
      effective_at: '2026-11-23T10:00:00.000Z',
      completed_at: null,
      reason: 'scheduled',
      changes: [],
    };
    const { c } = client(() => ({ body: envelope([record], { pagination: { page: 1, limit: 100, total: 1 } }) }), { logger });
    const first = await c.listRebalancing('sindex');
    await c.listRebalancing('sindex');
    expect(first.items[0]!.status).toBe('postponed');
    const warnings = lines.filter((l) => l.includes('postponed'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('rebalance.status');
  });
});

describe('errors', () => {
  const cases: [number, string, new (...a: never[]) => Error, string][] = [
    [400, 'INVALID_PARAMETER', BadRequestError, 'API_BAD_REQUEST'],
    [401, 'INVALID_API_KEY', AuthError, 'API_UNAUTHORIZED'],
    [403, 'FORBIDDEN', ForbiddenError, 'API_FORBIDDEN'],
    [404, 'RESOURCE_NOT_FOUND', NotFoundError, 'API_NOT_FOUND'],
  ];
  for (const [status, apiCode, cls, code] of cases) {
    it(`maps HTTP ${status} ${apiCode} to ${cls.name}, not retried`, async () => {
      const { c, log } = client(() => ({
        status,
        body: errorBody(apiCode, 'nope', status === 400 ? { details: [{ param: 'limit', issue: 'too big' }] } : {}),
        headers: { 'x-request-id': 'req_hdr' },
      }));
      const err = await c.getIndex('sindex').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(cls);
      expect(err).toMatchObject({ status, apiCode, code, requestId: 'req_err', endpoint: 'GET /indexes/sindex' });
      if (status === 400) expect(err).toMatchObject({ details: [{ param: 'limit', issue: 'too big' }] });
      expect(log).toHaveLength(1);
    });
  }

  it('retries 503s with backoff and succeeds when they clear', async () => {
    const { logger, lines } = captureLogger();
    const { c, log } = client((_req, n) => (n <= 2 ? { status: 503, body: errorBody('SERVICE_UNAVAILABLE', 'busy') } : { body: composition([]) }), { logger });
    await expect(c.getComposition('sindex')).resolves.toMatchObject({ index_id: 'sindex' });
    expect(log).toHaveLength(3);
    // Each retry at debug: counted by indexbot_api_retries_total, and a request that fails in the end is the caller's to log (trial 32: an outage logged 3 warnings per failed poll, 135 lines a minute).
    expect(lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'retrying request')).toEqual([
      expect.objectContaining({ level: 'debug', attempt: 1, status: 503 }),
      expect.objectContaining({ level: 'debug', attempt: 2, status: 503 }),
    ]);
  });

  it('gives up after the configured retries with a ServerError', async () => {
    const { c, log } = client(() => ({ status: 500, body: errorBody('INTERNAL_ERROR', 'boom') }), { retries: 2 });
    const err = await c.getComposition('sindex').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect(err).toMatchObject({ status: 500, apiCode: 'INTERNAL_ERROR', kind: 'temporary' });
    expect(log).toHaveLength(3);
  });

  it('never retries a POST (a replayed refresh would trip reuse detection)', async () => {
    const { c, log } = client(() => ({ status: 503, body: errorBody('SERVICE_UNAVAILABLE', 'busy') }));
    await expect(c.refreshTokens('rt')).rejects.toBeInstanceOf(ServerError);
    expect(log).toHaveLength(1);
  });

  it('backs off exponentially with full jitter on the injected clock', async () => {
    const clock = new ManualClock();
    const { c, log } = client((_req, n) => (n <= 3 ? { status: 502, body: 'bad gateway' } : { body: composition([]) }), {
      clock,
      random: () => 0.999,
      retryBaseMs: 100,
      retries: 3,
    });
    await clock.settle(c.getComposition('sindex'));
    const gaps = log.slice(1).map((r, i) => r.at - log[i]!.at);
    expect(gaps).toEqual([99, 199, 399]);
  });

  it('turns an HTML error page into a clear ServerError, not a JSON parse trace', async () => {
    const { c } = client(() => ({ status: 502, body: '<html><body>502 Bad Gateway</body></html>', headers: { 'content-type': 'text/html' } }), { retries: 0 });
    const err = (await c.getIndex('sindex').catch((e: unknown) => e)) as ServerError;
    expect(err).toBeInstanceOf(ServerError);
    expect(err.message).toContain('non-JSON error body (text/html)');
    expect(err.message).not.toMatch(/Unexpected token|JSON\.parse/);
  });

  it('reports a 200 whose body is not JSON as MalformedResponseError', async () => {
    const { c } = client(() => ({ body: '{"success": true, "data": {' }));
    const err = await c.getIndex('sindex').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MalformedResponseError);
    expect(err).toMatchObject({ code: 'RESPONSE_MALFORMED', status: 200, endpoint: 'GET /indexes/sindex' });
  });

  it('passes an unknown error code through and warns once', async () => {
    const { logger, lines } = captureLogger();
    const { c } = client(() => ({ status: 409, body: errorBody('INDEX_FROZEN', 'frozen') }), { logger });
    const err = await c.getIndex('sindex').catch((e: unknown) => e);
    await c.getIndex('sindex').catch(() => undefined);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err).toMatchObject({ apiCode: 'INDEX_FROZEN', status: 409 });
    expect(lines.filter((l) => l.includes('INDEX_FROZEN'))).toHaveLength(1);
  });

  it('re-queues a 429 until the reset, so the caller sees a delay and not an error', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 22, 10, 0, 0));
    const { c, log } = client(
      (_req, n) => (n === 1 ? { status: 429, body: errorBody('RATE_LIMIT_EXCEEDED', 'slow down'), headers: { 'retry-after': '2', 'x-ratelimit-remaining': '0' } } : { body: composition([]) }),
      { clock },
    );
    await expect(clock.settle(c.getComposition('sindex'))).resolves.toMatchObject({ index_id: 'sindex' });
    expect(log).toHaveLength(2);
    expect(log[1]!.at - log[0]!.at).toBeGreaterThanOrEqual(2_000);
  });

  it('returns a RateLimitError once the re-queue limit is spent', async () => {
    const clock = new ManualClock();
    const { c, log } = client(() => ({ status: 429, body: errorBody('RATE_LIMIT_EXCEEDED', 'no'), headers: { 'retry-after': '1' } }), {
      clock,
      maxRateLimitRequeues: 2,
    });
    expect(await clock.settle(c.getIndex('sindex')).catch((e: unknown) => e)).toBeInstanceOf(RateLimitError);
    expect(log).toHaveLength(3);
  });

  it('logs every attempt with method, path, query, status, duration and request id', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 22, 10, 0, 0));
    const { logger, lines } = captureLogger();
    const slow = async <T>(ms: number, res: T) => {
      await clock.advance(ms);
      return res;
    };
    const { c } = client(
      (_req, n) =>
        n === 1
          ? slow(40, { status: 503, body: errorBody('SERVICE_UNAVAILABLE', 'busy') })
          : n === 2
            ? slow(5, { status: 429, body: errorBody('RATE_LIMIT_EXCEEDED', 'no'), headers: { 'retry-after': '1', 'x-request-id': 'req_hdr' } })
            : slow(12, { body: envelope([], { pagination: { page: 1, limit: 100, total: 0 } }) }),
      { clock, logger, apiKey: 'sk_test_0123456789' },
    );
    await clock.settle(c.iterateHistory('sindex', { interval: '1h' }).toArray());
    const requests = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request');
    expect(requests.map(({ level, method, path, query, status, durationMs, requestId }) => ({ level, method, path, query, status, durationMs, requestId }))).toEqual([
      { level: 'debug', method: 'GET', path: '/indexes/sindex/history', query: 'interval=1h&page=1&limit=100', status: 503, durationMs: 40, requestId: 'req_err' },
      { level: 'debug', method: 'GET', path: '/indexes/sindex/history', query: 'interval=1h&page=1&limit=100', status: 429, durationMs: 5, requestId: 'req_hdr' },
      { level: 'debug', method: 'GET', path: '/indexes/sindex/history', query: 'interval=1h&page=1&limit=100', status: 200, durationMs: 12, requestId: 'req_test' },
    ]);
  });

  it('logs a request that got no response with its errno and no status', async () => {
    const { logger, lines } = captureLogger();
    const { c } = client(
      () => {
        throw Object.assign(new AxiosError('connect ECONNREFUSED 127.0.0.1:9', 'ECONNREFUSED'), { cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }) });
      },
      { logger, retries: 0 },
    );
    await expect(c.getIndex('sindex')).rejects.toMatchObject({ code: 'NETWORK_ERROR', errno: 'ECONNREFUSED' });
    const line = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request');
    expect(line).toMatchObject({ method: 'GET', path: '/indexes/sindex', status: null, errno: 'ECONNREFUSED' });
    expect(line!.durationMs).toEqual(expect.any(Number));
  });

  it('never puts the API key in an error, its JSON, its inspection or a log line', async () => {
    const canary = 'sk_live_CANARY_0123456789abcdef';
    const { logger, lines } = captureLogger();
    const { c, log } = client(() => ({ status: 401, body: errorBody('INVALID_API_KEY', `key ${canary} is revoked`) }), { apiKey: canary, logger });
    const err = (await c.getIndex('sindex').catch((e: unknown) => e)) as AuthError;
    expect(log[0]!.authorization).toBe(`Bearer ${canary}`);
    expect(err.message).not.toContain(canary);
    expect(err.message).toContain('[REDACTED]');
    expect(JSON.stringify(err)).not.toContain(canary);
    expect(inspect(err, { depth: 10 })).not.toContain(canary);
    expect(String(err.stack)).not.toContain(canary);
    expect(lines.join('\n')).not.toContain(canary);
  });
});

describe('configuration', () => {
  it('rejects a bad base URL with a clear error', () => {
    expect(() => new IndexClient({ baseUrl: 'not a url' })).toThrow(/base URL is not a URL/);
    expect(() => new IndexClient({ baseUrl: 'ftp://x/v1' })).toThrow(/http\(s\)/);
    // The whole value, not the scheme it parses as ("localhost:").
    expect(() => new IndexClient({ baseUrl: 'localhost:47931' })).toThrow('base URL must be http(s), got "localhost:47931"');
    expect(() => new IndexClient({ baseUrl: 'http://127.0.0.1:47931' })).toThrow(
      'base URL must end in the API\'s version segment /v1, such as http://127.0.0.1:47931/v1; got "http://127.0.0.1:47931"',
    );
    expect(() => new IndexClient({ baseUrl: 'https://user:pw@x/v1' })).toThrow(/credentials/);
  });

  it('refuses every option out of its range at construction, naming it and the value received (trial 30: a bad tier failed the first call with a TypeError)', () => {
    const refused = (options: Partial<IndexClientOptions>) => {
      try {
        new IndexClient({ baseUrl: BASE, apiKey: 'sk_test_key_123', ...options });
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as Error).message;
      }
      return 'constructed';
    };
    expect(refused({ tier: 'gold' as never })).toBe('IndexClient: Expected `tier` to be one of public, standard, basic, premium, enterprise, got `gold`');
    expect(refused({ tier: 'enterprise' })).toBe('IndexClient: the enterprise tier needs `enterpriseLimits` { limit, burst }');
    expect(refused({ tier: 'enterprise', enterpriseLimits: { limit: 0, burst: 10 } })).toBe('IndexClient: Expected `enterpriseLimits.limit` to be an integer from 1 to 10000000, got `0`');
    expect(refused({ timeoutMs: -1 })).toBe('IndexClient: Expected `timeoutMs` to be an integer from 1 to 2147483647, got `-1`');
    expect(refused({ windowMs: 0 })).toMatch(/`windowMs` to be an integer from 1 to 3600000, got `0`/);
    expect(refused({ retries: 1.5 })).toMatch(/`retries` to be an integer from 0 to 100, got `1.5`/);
    expect(refused({ retryBaseMs: Number.NaN })).toMatch(/`retryBaseMs`.*got `NaN`/);
    expect(refused({ retryMaxMs: 2 ** 31 })).toMatch(/`retryMaxMs`.*got `2147483648`/);
    expect(refused({ maxRateLimitRequeues: -1 })).toMatch(/`maxRateLimitRequeues`.*got `-1`/);
    expect(refused({ refreshMarginMs: -5 })).toMatch(/`refreshMarginMs`.*got `-5`/);
    expect(refused({ pageSize: 101 })).toMatch(/`pageSize` to be an integer from 1 to 100, got `101`/);
    expect(refused({ paging: 'cursor' as never })).toBe("IndexClient: Expected `paging` to be 'page' or 'offset', got `cursor`");
    expect(refused({ tier: 'premium', timeoutMs: 1, retries: 0, retryBaseMs: 0, windowMs: 3_600_000, pageSize: 1, paging: 'offset' })).toBe('constructed');
  });

  it('refuses an INDEXBOT_TIER that is no tier, by the variable, as the CLI does', () => {
    const env = { INDEXBOT_BASE_URL: BASE, INDEXBOT_API_KEY: 'sk_env_key_123' };
    expect(() => IndexClient.fromEnv({}, { ...env, INDEXBOT_TIER: 'Basic' })).toThrow(new ConfigError('INDEXBOT_TIER: expected one of public, standard, basic, premium, enterprise, got "Basic"'));
    expect(IndexClient.fromEnv({}, { ...env, INDEXBOT_TIER: 'premium' }).rateGates()).toEqual([]);
  });

  it('reads the base URL and API key from the environment and sends the key as Bearer', async () => {
    const fake = fakeTransport(() => ({ body: composition([]) }));
    const c = IndexClient.fromEnv({ adapter: fake.adapter }, { INDEXBOT_BASE_URL: BASE, INDEXBOT_API_KEY: 'sk_env_key_123' });
    await c.getComposition('sindex');
    expect(fake.log[0]!.authorization).toBe('Bearer sk_env_key_123');
    // Library code has no --base-url flag to pass (it said so).
    expect(() => IndexClient.fromEnv({}, {})).toThrow('no base URL: set INDEXBOT_BASE_URL, or pass fromEnv({ baseUrl })');
  });

  it('keeps one rate gate per credential and shows its state', async () => {
    const { c } = client(() => ({ body: composition([]), headers: { 'x-ratelimit-limit': '300', 'x-ratelimit-remaining': '250', 'x-ratelimit-reset': '1795341660' } }), {
      apiKey: 'sk_state_key_1234',
    });
    await c.getComposition('sindex');
    const gates = c.rateGates();
    expect(gates).toHaveLength(1);
    expect(gates[0]!.name).toMatch(/^key:[0-9a-f]{8}$/);
    expect(gates[0]!.name).not.toContain('sk_state');
    expect(gates[0]).toMatchObject({ limit: 300, burst: 500, remaining: 250, sent: 1 });
  });
});

describe('waitSignal: ends a call only while it waits its turn', () => {
  const held = (s: AbortSignal) => {
    // Node's record of signals made from this one by AbortSignal.any: on Node 20 it kept one per call, for good.
    const dependants = Object.getOwnPropertySymbols(s).find((k) => k.description === 'kDependantSignals');
    return { listeners: getEventListeners(s, 'abort').length, dependants: dependants ? (s as unknown as Record<symbol, Set<unknown>>)[dependants]!.size : 0 };
  };
  const tokens = () => ({ body: envelope([token(1)], { pagination: { page: 1, limit: 10, total: 1 } }) });

  it('leaves nothing on a long-lived signal after many calls', async () => {
    const { c } = client(tokens);
    const own = new AbortController();
    const wait = new AbortController();
    // Within the public tier's burst: no call waits for a token.
    for (let i = 0; i < 80; i++) await c.listTokens({ signal: own.signal, waitSignal: wait.signal });
    expect(held(own.signal)).toEqual({ listeners: 0, dependants: 0 });
    expect(held(wait.signal)).toEqual({ listeners: 0, dependants: 0 });
  });

  it('cuts a retry backoff short with its reason, and leaves a request already sent to finish', async () => {
    const wait = new AbortController();
    const stopped = new Error('stopped');
    // A 503, then a long backoff: the wait signal ends the call there, with its own reason.
    const backoff = client(
      () => {
        setTimeout(() => wait.abort(stopped), 20);
        return { status: 503, body: errorBody('SERVICE_UNAVAILABLE', 'down') };
      },
      { retryBaseMs: 60_000, random: () => 0.99 },
    );
    await expect(backoff.c.listTokens({ waitSignal: wait.signal })).rejects.toBe(stopped);
    expect(backoff.log).toHaveLength(1);
    // Aborted while the request is on its way: the answer still comes back.
    const late = new AbortController();
    const sent = client(async () => {
      late.abort(stopped);
      await new Promise((resolve) => setTimeout(resolve, 20));
      return tokens();
    });
    await expect(sent.c.listTokens({ waitSignal: late.signal })).resolves.toMatchObject({ items: [{ symbol: 'T1' }] });
  });
});
