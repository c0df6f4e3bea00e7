import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FixedWindowServerOptions {
  /** Requests allowed per window, stated in `X-RateLimit-Limit`. */
  limit: number;
  windowMs: number;
  /**
   * Leave the rate headers off this successful response (1-based count within its window),
   * as real servers do on some answers. @default never
   */
  omitHeaders?: (countInWindow: number) => boolean;
}

export interface FixedWindowServer {
  baseUrl: string;
  /** Local time window 0 began (a whole second). */
  windowStart: number;
  /** Requests received per window, by window number (0 = the one the server started in). */
  perWindow(): number[];
  /** Window number of a local time. */
  windowOf(at: number): number;
  sent(): number;
  rateLimited(): number;
  /** 429s per window, like `perWindow`. */
  rateLimitedPerWindow(): number[];
  close(): Promise<void>;
}

/**
 * A server with fixed windows counted from the second it started in, answering a composition
 * to every GET; past the limit, a 429 with the reset, as such servers send it. The tests and
 * both rate benchmarks (bench/rate-gate.ts, bench/shared-gate.ts) use this one server.
 */
export async function startFixedWindowServer(options: FixedWindowServerOptions): Promise<FixedWindowServer> {
  const { limit, windowMs, omitHeaders = () => false } = options;
  // Windows start on whole seconds, so `X-RateLimit-Reset` (whole seconds) is exact.
  const start = Math.floor(Date.now() / 1000) * 1000;
  const used: number[] = [];
  const limited: number[] = [];
  const windowOf = (at: number) => Math.floor((at - start) / windowMs);
  const body = JSON.stringify({
    success: true,
    data: { index_id: 'sindex', as_of: new Date(start).toISOString(), rebalance_id: null, constituents: [] },
    meta: { timestamp: new Date(start).toISOString(), request_id: 'fixed-window' },
  });
  const server: Server = createServer((_req, res) => {
    const window = windowOf(Date.now());
    const count = (used[window] ?? 0) + 1;
    used[window] = count;
    const headers = {
      'Content-Type': 'application/json',
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': String(Math.max(0, limit - count)),
      'X-RateLimit-Reset': String(Math.ceil((start + (window + 1) * windowMs) / 1000)),
    };
    if (count > limit) {
      limited[window] = (limited[window] ?? 0) + 1;
      res.writeHead(429, headers);
      res.end(JSON.stringify({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED', message: 'slow down' }, meta: {} }));
      return;
    }
    res.writeHead(200, omitHeaders(count) ? { 'Content-Type': 'application/json' } : headers);
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const dense = (a: number[]) => Array.from({ length: a.length }, (_, i) => a[i] ?? 0);
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    windowStart: start,
    perWindow: () => dense(used),
    windowOf,
    sent: () => used.reduce((a, b) => a + (b ?? 0), 0),
    rateLimited: () => limited.reduce((a, b) => a + (b ?? 0), 0),
    rateLimitedPerWindow: () => dense(limited),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
