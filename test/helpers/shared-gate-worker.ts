/**
 * One bot process for the shared-budget tests and bench: the real client, with or without a
 * Redis-shared budget, calling as fast as its gate lets it from `start` to `end` (epoch ms).
 * It prints `ready` once loaded, then reads `start end` from stdin (so slow starts on a busy
 * machine do not skew the run), and at the end prints one JSON line: successful calls by
 * second, failed calls, the shared budget's state, and how long each take from the shared
 * budget took (the latency the shared gate adds), and when it went back to the shared budget
 * after losing Redis. Use it through `runWorkers`.
 */
import { createInterface } from 'node:readline';
import { IndexClient, type SharedBudgetSource } from '../../src/api/index.ts';
import { RedisBudgets, type SharedBudget } from '../../src/ratelimit/index.ts';

interface WorkerArgs {
  baseUrl: string;
  apiKey: string;
  redisUrl?: string;
  tier: 'basic' | 'premium';
  windowMs: number;
  concurrency: number;
}

const args = JSON.parse(process.argv[2]!) as WorkerArgs;
const takeMs: number[] = [];
const rejoinedAt: number[] = [];
const logger = {
  info: (_: unknown, msg: string) => {
    if (msg.startsWith('shared rate budget reachable again')) rejoinedAt.push(Date.now());
  },
  warn: () => {},
  error: () => {},
  debug: () => {},
  child: () => logger,
} as never;
const budgets = args.redisUrl ? new RedisBudgets({ url: args.redisUrl, commandTimeoutMs: 250, probeEveryMs: 250, heartbeatEveryMs: 1_000, logger }) : undefined;
const timed: SharedBudgetSource | undefined = budgets && {
  budget(digest, name) {
    const inner = budgets.budget(digest, name);
    const wrapped: SharedBudget = {
      async take(priority, view) {
        const t0 = performance.now();
        const r = await inner.take(priority, view);
        takeMs.push(performance.now() - t0);
        return r;
      },
      observe: (o) => inner.observe(o),
      state: () => inner.state(),
    };
    return wrapped;
  },
};
await budgets?.ready();
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
const [start, end] = (await new Promise<string>((resolve) => lines.once('line', resolve))).split(' ').map(Number) as [number, number];
lines.close();
const client = new IndexClient({ baseUrl: args.baseUrl, apiKey: args.apiKey, tier: args.tier, windowMs: args.windowMs, sharedBudgets: timed, maxRateLimitRequeues: 0, retries: 0 });
const okBySecond: Record<number, number> = {};
const failedBySecond: Record<number, number> = {};
let failed = 0;
const abort = new AbortController();
await new Promise((r) => setTimeout(r, Math.max(0, start - Date.now())));
setTimeout(() => abort.abort(), Math.max(0, end - Date.now())).unref();
await Promise.all(
  Array.from({ length: args.concurrency }, async () => {
    while (Date.now() < end) {
      try {
        await client.getComposition('sindex', { signal: abort.signal });
        const s = Math.floor((Date.now() - start) / 1000);
        okBySecond[s] = (okBySecond[s] ?? 0) + 1;
      } catch {
        if (abort.signal.aborted) continue;
        failed++;
        const s = Math.floor((Date.now() - start) / 1000);
        failedBySecond[s] = (failedBySecond[s] ?? 0) + 1;
      }
    }
  }),
);
const gate = client.rateGates().find((g) => g.name.startsWith('key:'));
process.stdout.write(`${JSON.stringify({ okBySecond, failedBySecond, failed, shared: gate?.shared, takeMs, rejoinedAt })}\n`);
await budgets?.close();
