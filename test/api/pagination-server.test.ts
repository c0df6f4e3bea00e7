import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { IndexClient, PageIterator } from '../../src/api/index.ts';
import { ResponseValidationError } from '../../src/core/index.ts';

const TOKENS = Array.from({ length: 250 }, (_, i) => ({
  address: `${'So1ana'}${String(i).padStart(3, '0')}`.padEnd(44, '1'),
  symbol: `T${i}`,
  name: `Token ${i}`,
  decimals: 6,
  price_usd: 1 + i / 100,
}));

interface Asked {
  page: string | null;
  limit: string | null;
  offset: string | null;
}

/**
 * A real HTTP server for /v1/tokens with a paging behaviour of choice: `ignores-page`
 * serves the first `limit` items whatever page is asked, `offset-only` honours only
 * `offset`. `total` says whether `meta.pagination.total` is sent.
 */
async function tokenServer(mode: 'ignores-page' | 'offset-only', total: boolean): Promise<{ baseUrl: string; asked: Asked[]; server: Server }> {
  const asked: Asked[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const q = { page: url.searchParams.get('page'), limit: url.searchParams.get('limit'), offset: url.searchParams.get('offset') };
    asked.push(q);
    // A client that would page forever is cut off here, so the test fails instead of hanging.
    if (asked.length > 50) {
      res.writeHead(503, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'the test server stops after 50 requests' } }));
      return;
    }
    const limit = Number(q.limit ?? 100);
    const start = mode === 'offset-only' ? Number(q.offset ?? 0) : 0;
    const data = TOKENS.slice(start, start + limit);
    const meta: Record<string, unknown> = { timestamp: new Date().toISOString(), request_id: `req_${asked.length}` };
    if (total) meta.pagination = { page: 1, limit, total: TOKENS.length };
    const body = JSON.stringify({ success: true, data, meta });
    res.writeHead(200, { 'Content-Type': 'application/json', 'X-RateLimit-Limit': '1000', 'X-RateLimit-Remaining': '999', 'X-RateLimit-Reset': String(Math.ceil(Date.now() / 1000) + 60) });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, asked, server };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const client = (baseUrl: string, extra: Partial<ConstructorParameters<typeof IndexClient>[0]> = {}) => new IndexClient({ baseUrl, tier: 'premium', retries: 0, ...extra });

/** The call's outcome, or a failure if it is still paging after 10 s (the defect: forever). */
function within10s<T>(p: Promise<T>): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('still paging after 10 s')), 10_000))]);
}

describe('pagination against a real server that ignores the page parameter', () => {
  it.each([false, true])('the poller snapshot and the iterator stop at the repeated page with a clear error (total sent: %s)', async (total) => {
    const { baseUrl, asked } = await tokenServer('ignores-page', total);
    const snapshotError = await within10s(client(baseUrl).snapshot('tokens')).catch((e: unknown) => e);
    expect(snapshotError).toBeInstanceOf(ResponseValidationError);
    expect((snapshotError as Error).message).toBe('invalid response from GET /tokens: meta.pagination: page 2 repeats page 1: the server ignores the paging parameters');
    expect(asked).toHaveLength(2);
    const iteratorError = await within10s(client(baseUrl).iterateTokens().toArray()).catch((e: unknown) => e);
    expect(iteratorError).toBeInstanceOf(ResponseValidationError);
    expect((iteratorError as Error).message).toContain('GET /tokens: meta.pagination: page 2 repeats page 1');
  });
});

describe('the poller snapshot pages as the client is configured', () => {
  it('offset paging: reads every item of a server that honours only offset', async () => {
    const { baseUrl, asked } = await tokenServer('offset-only', false);
    const snapshot = await within10s(client(baseUrl, { paging: 'offset' }).snapshot('tokens'));
    expect(snapshot.error).toBeUndefined();
    expect((snapshot.value as { address: string }[]).map((t) => t.address)).toEqual(TOKENS.map((t) => t.address));
    expect(asked.map((a) => a.offset)).toEqual(['0', '100', '200']);
    expect(asked.every((a) => a.page === null)).toBe(true);
  });

  it('uses the configured page size, not a fixed 100', async () => {
    const { baseUrl, asked } = await tokenServer('offset-only', true);
    const snapshot = await within10s(client(baseUrl, { paging: 'offset', pageSize: 50 }).snapshot('tokens'));
    expect((snapshot.value as unknown[]).length).toBe(250);
    expect(asked.map((a) => a.limit)).toEqual(['50', '50', '50', '50', '50']);
  });
});

describe('PageIterator page cap', () => {
  it('a server that never ends (always a full, new page) is stopped after maxPages', async () => {
    let fetched = 0;
    const endless = new PageIterator(
      async ({ page, limit }) => {
        fetched++;
        return { items: Array.from({ length: limit }, (_, i) => page * limit + i), total: undefined, page, limit };
      },
      10,
      'GET /endless',
      5,
    );
    const e = await endless.toArray().catch((err: unknown) => err);
    expect(e).toBeInstanceOf(ResponseValidationError);
    expect((e as Error).message).toContain('GET /endless: meta.pagination: more than 5 pages of 10');
    expect(fetched).toBe(5);
  });
});
