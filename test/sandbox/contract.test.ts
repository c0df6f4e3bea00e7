import bs58 from 'bs58';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildSchemas } from '../../src/contract/index.ts';
import { type Sandbox, demoKey } from '../../src/sandbox/index.ts';
import { FIXED_TIME, control, raw, testSandbox } from '../helpers/sandbox.ts';

const strict = buildSchemas({ mode: 'strict' });
const successEnvelope = <S extends z.ZodType>(data: S) => z.strictObject({ success: z.literal(true), data, meta: strict.meta });
const listEnvelope = <S extends z.ZodType>(item: S) => z.strictObject({ success: z.literal(true), data: z.array(item), meta: strict.meta.extend({ pagination: strict.pagination }) });

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let sb: Sandbox;
let key: string;
const get = (path: string, auth = true) => raw(`${sb.baseUrl}${path}`, { headers: auth ? { Authorization: `Bearer ${key}` } : {} });

beforeAll(async () => {
  sb = await testSandbox({ enterpriseLimits: { limit: 1_000_000, burst: 1_000_000 } });
  key = sb.keys.enterprise;
});
afterAll(() => sb.close());

function expectStrict<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new Error(`contract violation: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

describe('records follow the contract exactly', () => {
  it('GET /indexes lists the four live indexes and at least four more', async () => {
    const res = await get('/indexes?limit=100');
    expect(res.status).toBe(200);
    const body = expectStrict(listEnvelope(strict.indexSummary), res.json);
    const ids = body.data.map((i) => i.id);
    expect(ids).toEqual(expect.arrayContaining(['sindex', 'mindex', 'dindex', 'nindex']));
    expect(ids.length).toBeGreaterThanOrEqual(8);
    expect(new Set(body.data.map((i) => i.rebalance_frequency))).toEqual(new Set(['daily', 'weekly', 'monthly', 'quarterly']));
    expect(body.meta.pagination).toEqual({ page: 1, limit: 100, total: ids.length });
  });

  it('every index detail, composition and performance record is strict and consistent', async () => {
    const list = expectStrict(listEnvelope(strict.indexSummary), (await get('/indexes?limit=100')).json).data;
    for (const { id } of list) {
      const detail = expectStrict(successEnvelope(strict.indexDetail), (await get(`/indexes/${id}`)).json).data;
      const comp = expectStrict(successEnvelope(strict.composition), (await get(`/indexes/${id}/composition`)).json).data;
      const perf = expectStrict(successEnvelope(strict.performance), (await get(`/indexes/${id}/performance`)).json).data;
      expect(comp.constituents.length).toBeGreaterThanOrEqual(8);
      expect(comp.constituents.length).toBeLessThanOrEqual(30);
      expect(detail.constituents_count).toBe(comp.constituents.length);
      const sum = (k: 'weight' | 'target_weight') => comp.constituents.reduce((s, c) => s + c[k], 0);
      expect(Math.abs(sum('weight') - 1)).toBeLessThan(1e-9);
      expect(Math.abs(sum('target_weight') - 1)).toBeLessThan(1e-9);
      for (const c of comp.constituents) expect(c.target_weight).toBeLessThanOrEqual(detail.methodology!.max_weight + 1e-9);
      const value = comp.constituents.reduce((s, c) => s + c.units! * c.price_usd, 0);
      expect(value / detail.current_price).toBeCloseTo(1, 7);
      expect(perf.nav / detail.current_price).toBeCloseTo(1, 9);
      expect(detail.methodology!.base_value).toBe(1000);
      expect(perf.returns.inception).toBeCloseTo(perf.nav / 1000 - 1, 9);
      expect(perf.max_drawdown_90d).toBeLessThanOrEqual(0);
    }
  });

  it('performance returns agree with the history', async () => {
    const perf = expectStrict(successEnvelope(strict.performance), (await get('/indexes/sindex/performance')).json).data;
    const from = new Date(FIXED_TIME - DAY).toISOString();
    const hist = expectStrict(listEnvelope(strict.historyPoint), (await get(`/indexes/sindex/history?interval=1h&from=${from}&limit=100`)).json);
    const first = hist.data[0]!;
    const last = hist.data.at(-1)!;
    expect(first.timestamp).toBe(from);
    expect(last.timestamp).toBe(new Date(FIXED_TIME).toISOString());
    expect(hist.meta.pagination.total).toBe(25);
    expect(perf.returns['24h']).toBeCloseTo(last.nav / first.nav - 1, 8);
    expect(perf.returns['1h']).toBeCloseTo(last.nav / hist.data.at(-2)!.nav - 1, 8);
    for (const point of hist.data) expect(Math.abs(point.constituents!.reduce((s, c) => s + c.weight, 0) - 1)).toBeLessThan(1e-9);
  });

  it('history reaches back at least a year at 1h and 1d, ascending', async () => {
    const from = new Date(FIXED_TIME - 366 * DAY).toISOString();
    const daily = expectStrict(listEnvelope(strict.historyPoint), (await get(`/indexes/nindex/history?interval=1d&from=${from}&limit=100`)).json);
    const hourly = expectStrict(listEnvelope(strict.historyPoint), (await get(`/indexes/nindex/history?interval=1h&from=${from}&limit=100&page=50`)).json);
    expect(daily.meta.pagination.total).toBeGreaterThanOrEqual(366);
    expect(hourly.meta.pagination.total).toBeGreaterThanOrEqual(366 * 24);
    const times = daily.data.map((p) => Date.parse(p.timestamp));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(times[1]! - times[0]!).toBe(DAY);
    expect(hourly.data).toHaveLength(100);
  });

  it('tokens: a universe of at least 60 with valid base58 mint addresses', async () => {
    const page1 = expectStrict(listEnvelope(strict.token), (await get('/tokens?limit=100')).json);
    expect(page1.meta.pagination.total).toBeGreaterThanOrEqual(60);
    for (const t of page1.data) expect(bs58.decode(t.address)).toHaveLength(32);
    expect(new Set(page1.data.map((t) => t.address)).size).toBe(page1.data.length);
  });

  it('rebalancing: newest first, consistent lifecycle, some cancelled', async () => {
    const res = expectStrict(listEnvelope(strict.rebalance), (await get('/indexes/lindex/rebalancing?limit=100')).json);
    expect(res.meta.pagination.total).toBeGreaterThan(100);
    const announced = res.data.map((r) => Date.parse(r.announced_at));
    expect(announced).toEqual([...announced].sort((a, b) => b - a));
    const all = [];
    for (let page = 1; page <= Math.ceil(res.meta.pagination.total / 100); page++) {
      all.push(...expectStrict(listEnvelope(strict.rebalance), (await get(`/indexes/lindex/rebalancing?limit=100&page=${page}`)).json).data);
    }
    const statuses = new Set(all.map((r) => r.status));
    expect(statuses.has('completed') && statuses.has('cancelled')).toBe(true);
    for (const r of all) {
      expect(Date.parse(r.announced_at)).toBeLessThan(Date.parse(r.effective_at));
      expect(r.completed_at === null).toBe(r.status !== 'completed');
      for (const c of r.changes) {
        expect(c.action === 'add').toBe(c.old_weight === 0);
        expect(c.action === 'remove').toBe(c.new_weight === 0);
      }
    }
    const filtered = expectStrict(listEnvelope(strict.rebalance), (await get('/indexes/lindex/rebalancing?status=cancelled&limit=100')).json);
    expect(filtered.data.every((r) => r.status === 'cancelled')).toBe(true);
    expect(filtered.data.length).toBe(all.filter((r) => r.status === 'cancelled').length);
  });

  it('portfolio for a credential with read:portfolio', async () => {
    const body = expectStrict(successEnvelope(strict.portfolio), (await get('/user/portfolio')).json).data;
    expect(body.holdings.length).toBeGreaterThan(0);
    expect(body.total_value_usd / body.holdings.reduce((s, h) => s + h.value_usd, 0)).toBeCloseTo(1, 9);
  });
});

describe('rebalancing lifecycle driven by control routes', () => {
  it('announces, completes at effective_at, switches the composition and keeps the value continuous', async () => {
    const before = (await get('/indexes/dindex/composition')).json.data;
    const trig = await control(sb, '/rebalance', { index_id: 'dindex', effective_in_seconds: 3600 });
    expect(trig.status).toBe(201);
    const rb = expectStrict(strict.rebalance, trig.json.data);
    expect(rb).toMatchObject({ status: 'announced', reason: 'manual', completed_at: null });
    expect(rb.changes.length).toBeGreaterThan(0);
    const listed = (await get('/indexes/dindex/rebalancing?status=announced')).json.data;
    expect(listed.map((r: { id: string }) => r.id)).toContain(rb.id);
    expect((await get('/indexes/dindex/composition')).json.data.rebalance_id).toBe(before.rebalance_id);

    await control(sb, '/clock', { advance_seconds: 3599.999 });
    const justBefore = (await get('/indexes/dindex')).json.data.current_price;
    await control(sb, '/clock', { advance_seconds: 0.002 });
    const justAfter = (await get('/indexes/dindex')).json.data.current_price;
    expect(justAfter / justBefore).toBeCloseTo(1, 7);

    const after = (await get('/indexes/dindex/composition')).json.data;
    expect(after.rebalance_id).toBe(rb.id);
    const targets = new Map(after.constituents.map((c: { address: string; target_weight: number }) => [c.address, c.target_weight]));
    for (const change of rb.changes) {
      if (change.action === 'remove') expect(targets.has(change.address)).toBe(false);
      else expect(targets.get(change.address)).toBeCloseTo(change.new_weight, 9);
    }
    const done = (await get('/indexes/dindex/rebalancing')).json.data.find((r: { id: string }) => r.id === rb.id);
    expect(done).toMatchObject({ status: 'completed', completed_at: rb.effective_at });
  });

  it('cancels an announced rebalance; the composition does not change', async () => {
    const before = (await get('/indexes/mindex/composition')).json.data.rebalance_id;
    const rb = (await control(sb, '/rebalance', { index_id: 'mindex', effective_in_seconds: 600 })).json.data;
    const cancelled = await control(sb, '/rebalance/cancel', { index_id: 'mindex', rebalance_id: rb.id });
    expect(cancelled.json.data.status).toBe('cancelled');
    await control(sb, '/clock', { advance_seconds: 700 });
    expect((await get('/indexes/mindex/composition')).json.data.rebalance_id).toBe(before);
    expect((await control(sb, '/rebalance/cancel', { index_id: 'mindex', rebalance_id: rb.id })).status).toBe(404);
  });
});

describe('errors use the envelope with the contract status and code', () => {
  const expectError = (res: { status: number; json: any; headers: Record<string, unknown> }, status: number, code: string) => {
    expect(res.status).toBe(status);
    const body = expectStrict(strict.errorEnvelope, res.json);
    expect(body.error.code).toBe(code);
    expect(body.meta.request_id).toBe(res.headers['x-request-id']);
    return body.error;
  };

  it('unknown routes and indexes are 404 RESOURCE_NOT_FOUND', async () => {
    expectError(await get('/nope'), 404, 'RESOURCE_NOT_FOUND');
    expectError(await get('/indexes/unknown-index/composition'), 404, 'RESOURCE_NOT_FOUND');
    expectError(await get('/indexes/UPPER'), 404, 'RESOURCE_NOT_FOUND');
    expectError(await raw(`${sb.origin}/v2/indexes`), 404, 'RESOURCE_NOT_FOUND');
    expectError(await raw(`${sb.baseUrl}/indexes`, { method: 'POST' }), 404, 'RESOURCE_NOT_FOUND');
  });

  for (const bad of ['0', '-1', '101', '1.5', 'abc', '']) {
    it(`limit=${JSON.stringify(bad)} and page=${JSON.stringify(bad)} are 400 INVALID_PARAMETER with details`, async () => {
      const limitErr = expectError(await get(`/indexes?limit=${bad}`), 400, 'INVALID_PARAMETER');
      expect(limitErr.details).toEqual([expect.objectContaining({ param: 'limit' })]);
      if (bad !== '101') {
        const pageErr = expectError(await get(`/tokens?page=${bad}`), 400, 'INVALID_PARAMETER');
        expect(pageErr.details).toEqual([expect.objectContaining({ param: 'page' })]);
      }
    });
  }

  it('bad history and rebalancing filters are 400 INVALID_PARAMETER', async () => {
    expectError(await get('/indexes/sindex/history?interval=5m'), 400, 'INVALID_PARAMETER');
    expectError(await get('/indexes/sindex/history?from=yesterday'), 400, 'INVALID_PARAMETER');
    expectError(await get('/indexes/sindex/history?from=2026-02-01&to=2026-01-01'), 400, 'INVALID_PARAMETER');
    expectError(await get('/indexes/sindex/rebalancing?status=done'), 400, 'INVALID_PARAMETER');
    expectError(await get('/indexes?page=1&page=2'), 400, 'INVALID_PARAMETER');
  });

  it('a malformed JSON body is 400', async () => {
    const res = await raw(`${sb.baseUrl}/auth/challenge`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"wallet": ' });
    expectError(res, 400, 'INVALID_PARAMETER');
  });

  it('a body over 64 KiB is refused with 413, declared or streamed, and the server lives on', async () => {
    const big = JSON.stringify({ wallet: 'x'.repeat(70 * 1024) });
    expectError(await raw(`${sb.baseUrl}/auth/challenge`, { method: 'POST', body: big }), 413, 'INVALID_PARAMETER');
    expectError(await raw(`${sb.baseUrl}/auth/challenge`, { method: 'POST', body: big, chunked: true }), 413, 'INVALID_PARAMETER');
    expect((await get('/tokens')).status).toBe(200);
  });

  it('an exception inside a handler is a 500 INTERNAL_ERROR envelope and the server lives on', async () => {
    await control(sb, '/faults', { kind: 'exception', count: 1, path_prefix: '/tokens' });
    const err = expectError(await get('/tokens'), 500, 'INTERNAL_ERROR');
    expect(err.message).not.toMatch(/injected|stack|at /);
    expect((await get('/tokens')).status).toBe(200);
  });

  it('control routes are off unless enabled', async () => {
    const plain = await testSandbox({ control: false });
    try {
      expectError(await raw(`${plain.origin}/_sandbox/counters`), 404, 'RESOURCE_NOT_FOUND');
    } finally {
      await plain.close();
    }
  });
});

describe('API keys, permissions and scopes', () => {
  it('public endpoints need no credential; a credential that is sent must be valid', async () => {
    expect((await get('/indexes', false)).status).toBe(200);
    const bad = await raw(`${sb.baseUrl}/indexes`, { headers: { Authorization: 'Bearer sk_sandbox_nope' } });
    expect(bad.status).toBe(401);
    expect(bad.json.error.code).toBe('INVALID_API_KEY');
    const malformed = await raw(`${sb.baseUrl}/indexes`, { headers: { Authorization: 'Basic abc' } });
    expect(malformed.status).toBe(401);
  });

  it('the portfolio needs a credential: 401 missing_credentials without one', async () => {
    const res = await get('/user/portfolio', false);
    expect(res.status).toBe(401);
    expect(res.json.error).toMatchObject({ code: 'INVALID_API_KEY', reason: 'missing_credentials' });
  });

  it('403 for a missing permission or a path outside the key scopes; 401 once revoked', async () => {
    const readOnly = demoKey('basic', { name: 'read-only', permissions: ['read:index'] });
    const scoped = demoKey('basic', { name: 'scoped', scopes: ['/user/*'] });
    const s = await testSandbox({ apiKeys: [readOnly, scoped] });
    try {
      const as = (k: string, p: string) => raw(`${s.baseUrl}${p}`, { headers: { Authorization: `Bearer ${k}` } });
      expect((await as(readOnly.key, '/indexes')).status).toBe(200);
      const noPerm = await as(readOnly.key, '/user/portfolio');
      expect(noPerm.status).toBe(403);
      expect(noPerm.json.error.code).toBe('FORBIDDEN');
      expect((await as(scoped.key, '/user/portfolio')).status).toBe(200);
      expect((await as(scoped.key, '/indexes/sindex')).status).toBe(403);
      expect((await control(s, '/revoke-key', { key: scoped.key })).status).toBe(200);
      const revoked = await as(scoped.key, '/user/portfolio');
      expect(revoked.status).toBe(401);
      expect(revoked.json.error.code).toBe('INVALID_API_KEY');
    } finally {
      await s.close();
    }
  });
});

describe('rate limits', () => {
  it('sends the three headers on every response, 429s included, with Retry-After on a 429', async () => {
    // The limiter's clock stands still: a slow machine taking over a second for the burst
    // would otherwise see a token refilled before the 101st request.
    const t0 = Date.now();
    const s = await testSandbox({ rateWindowMs: 60_000, realNow: () => t0 });
    try {
      const responses = [];
      for (let i = 0; i < 102; i++) responses.push(await raw(`${s.baseUrl}/${i % 2 ? 'tokens' : 'missing'}`));
      for (const r of responses) {
        expect(r.headers['x-ratelimit-limit']).toBe('60');
        expect(Number(r.headers['x-ratelimit-remaining'])).toBeGreaterThanOrEqual(0);
        expect(Number(r.headers['x-ratelimit-reset'])).toBeGreaterThan(t0 / 1000 - 1);
      }
      // Public burst is 100.
      expect(responses.slice(0, 100).every((r) => r.status !== 429)).toBe(true);
      const limited = responses[100]!;
      expect(limited.status).toBe(429);
      expect(limited.json.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      const counters = (await control(s, '/counters')).json.data;
      expect(counters.rateLimited).toBe(2);
      expect(Object.keys(counters.rateLimitedByCredential)[0]).toMatch(/^ip:/);
    } finally {
      await s.close();
    }
  });

  it('refills at limit per scaled window: --rate-window-ms shortens the minute', async () => {
    const s = await testSandbox({ rateWindowMs: 1_000 });
    try {
      const hit = () => raw(`${s.baseUrl}/tokens`);
      const started = Date.now();
      const burst = await Promise.all(Array.from({ length: 140 }, hit));
      // The public tier: a burst of 100, then 60 per (scaled) window for as long as the burst took.
      const allowed = 100 + Math.ceil((60 * (Date.now() - started)) / 1_000);
      expect(burst.filter((r) => r.status === 200).length).toBeLessThanOrEqual(allowed);
      expect(burst.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(Math.min(20, 140 - allowed));
      // 60 per 1000 ms: one token every ~17 ms.
      await new Promise((r) => setTimeout(r, 120));
      expect((await hit()).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});

describe('determinism', () => {
  it('two sandboxes with one seed and one simulated time serve identical bodies', async () => {
    const a = await testSandbox({ seed: 42 });
    const b = await testSandbox({ seed: 42 });
    const other = await testSandbox({ seed: 43 });
    try {
      const paths = [
        '/indexes',
        '/indexes/sindex',
        '/indexes/mindex/composition',
        '/indexes/aindex/performance',
        '/indexes/lindex/rebalancing',
        '/indexes/tindex/history?interval=1h&limit=50',
        '/tokens?limit=100',
      ];
      for (const p of paths) {
        const [ra, rb, ro] = await Promise.all([a, b, other].map((s) => raw(`${s.baseUrl}${p}`)));
        expect(ra!.text).toBe(rb!.text);
        expect(ro!.text).not.toBe(ra!.text);
      }
    } finally {
      await Promise.all([a.close(), b.close(), other.close()]);
    }
  });
});
