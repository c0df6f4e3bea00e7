import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FixedWindowServer, startFixedWindowServer } from '../helpers/fixed-window-server.ts';
import { type TestRedis, startRedis } from '../helpers/redis.ts';
import { runWorkers } from '../helpers/shared-gate-workers.ts';

/**
 * Four real bot processes (child processes running the real client) on one API key, against
 * a server with fixed 1 s windows of 10 requests: far less than the basic tier they are
 * configured for (300 per window), so only what they learn, and share, holds them back.
 */
const WINDOW_MS = 1_000;
const LIMIT = 10;
const PROCESSES = 4;

let redis: TestRedis;
let runs = 0;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

/** The four, from the next whole second (a window start) for `seconds`; the windows they ran in, whole ones only. */
async function runFour(server: FixedWindowServer, redisUrl: string | undefined, seconds: number, during?: (start: number) => Promise<void>) {
  // A key of its own per run: the processes of an earlier run stay in the heartbeat set for a minute.
  const config = { baseUrl: server.baseUrl, apiKey: `one-key-for-all-${++runs}`, redisUrl, tier: 'basic' as const, windowMs: WINDOW_MS, concurrency: 6 };
  const { start, end, results } = await runWorkers(PROCESSES, config, seconds, during);
  // The first window with traffic is where the processes learn the server's limit (on a busy machine they may begin late).
  const from = server.windowOf(start);
  const first =
    from +
    server
      .perWindow()
      .slice(from)
      .findIndex((n) => n > 0);
  return { results, first, last: server.windowOf(end) - 1 };
}

describe('one API key, four processes, a fixed window smaller than the tier', () => {
  it('without a shared budget they draw 429s; with one, none after the first window and never over the limit together', async () => {
    const alone = await startFixedWindowServer({ limit: LIMIT, windowMs: WINDOW_MS });
    try {
      const { first, last } = await runFour(alone, undefined, 5);
      const limited = alone.rateLimitedPerWindow().slice(first + 1, last + 1);
      expect(limited.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    } finally {
      await alone.close();
    }

    const shared = await startFixedWindowServer({ limit: LIMIT, windowMs: WINDOW_MS });
    try {
      const { results, first, last } = await runFour(shared, redis.url, 5);
      expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0]);
      expect(
        shared
          .rateLimitedPerWindow()
          .slice(first + 1, last + 1)
          .every((n) => n === 0),
      ).toBe(true);
      expect(Math.max(...shared.perWindow().slice(first + 1, last + 1))).toBeLessThanOrEqual(LIMIT);
      // And the budget is used: most windows get the whole limit.
      const used = shared.perWindow().slice(first + 1, last + 1);
      expect(used.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(used.length * LIMIT * 0.8);
      expect(results[0]!.result.shared).toMatchObject({ mode: 'shared' });
      expect(results[0]!.result.shared!.processes).toHaveLength(PROCESSES);
    } finally {
      await shared.close();
    }
  }, 120_000);

  it('Redis killed mid-run: nobody stops, each paces to its local share, and the shared budget returns', async () => {
    const server = await startFixedWindowServer({ limit: LIMIT, windowMs: WINDOW_MS });
    try {
      let killedAt = 0;
      let backAt = 0;
      const { results, first, last } = await runFour(server, redis.url, 8, async (start) => {
        await new Promise((r) => setTimeout(r, start + 2_000 - Date.now()));
        killedAt = Date.now();
        await redis.kill();
        await new Promise((r) => setTimeout(r, 2_500));
        await redis.restart();
        backAt = Date.now();
      });
      expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0]);
      // Every process kept going through the outage (seconds 2-4 after the start).
      for (const { result } of results) expect((result.okBySecond['3'] ?? 0) + (result.okBySecond['4'] ?? 0)).toBeGreaterThan(0);
      const localShare = Math.ceil(LIMIT / PROCESSES);
      const perWindow = server.perWindow();
      for (let w = first + 1; w <= last; w++) expect(perWindow[w]).toBeLessThanOrEqual(LIMIT + localShare);
      // Back on the shared budget at the end, all four of them.
      for (const { result } of results) expect(result.shared?.mode).toBe('shared');
      expect(backAt - killedAt).toBeGreaterThan(2_000);
      // Each went back within about a second of Redis (its reconnect delay is at most 1 s), and
      // from the first whole window after the last of them did, no window goes over the limit.
      // The first rejoin after the kill: a stall on a busy machine may make a process fall back and rejoin again later.
      const rejoined = results.map(({ result }, i) => {
        const at = result.rejoinedAt.find((t) => t > killedAt);
        expect(at, `process ${i} logged no return to the shared budget after Redis was killed`).toBeDefined();
        return at!;
      });
      for (const at of rejoined) expect(at - backAt).toBeLessThan(2_000);
      const checked = server.windowOf(Math.max(...rejoined)) + 1;
      expect(last - checked).toBeGreaterThanOrEqual(1);
      for (let w = checked; w <= last; w++) expect(perWindow[w]).toBeLessThanOrEqual(LIMIT);
    } finally {
      await server.close();
    }
  }, 120_000);
});
