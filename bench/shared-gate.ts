/**
 * N bot processes (1, 2, 4, 8; each the real client with the Redis-shared budget, 6 calls at
 * a time) on one API key, against:
 * - bucket: the sandbox's token bucket, basic tier (300 per 2 s window, burst 500);
 * - fixed-window: a server with fixed 2 s windows of 100 requests, a third of the basic tier
 *   the processes are configured for.
 * Prints per server and N: the 429s after the first window (goal 0); utilization after the
 * first window, i.e. requests the server let through / what its limit allowed in that time
 * (goal at least 95 %); and the latency the shared gate adds to a request, i.e. the duration
 * of each take from the shared budget (one Lua script call on a local redis-server), p50 and p99.
 * What a token bucket allowed after the first window is what it held when that window ended
 * plus its refill until the end, both read from the server's own bucket (it runs in this
 * process) at those two moments, with the requests it let through and refused in between.
 * An estimate from the calls answered in the first window counted refill a full bucket could
 * not hold as allowed: the sandbox answers its first composition call in about 1 s, while the
 * gate sends nothing else until that first answer says what is left, so the bucket sits full
 * and its refill overflows, which no client could have used (one process, local gate: 94.2 %
 * by that estimate, 99.2 % read from the bucket, in one run measured both ways).
 * First on each server, the reference: one process with its local gate alone (no Redis), the
 * figure the shared gate is to match. Between the two servers, the gates alone against the
 * bucket (see `gateOnlyRow`): what the gates leave unused where the processes' CPU does not
 * bound them, as on a loaded 2-core machine. `BENCH_SECONDS` (default 8, 4 to 60) per point; the first
 * window is left out of the figures.
 */
import { setMaxListeners } from 'node:events';
import { cpus, loadavg } from 'node:os';
import { RateGate, RedisBudgets, credentialDigest } from '../src/ratelimit/index.ts';
import { BucketLimiter, type BucketState, demoKey, startSandbox } from '../src/sandbox/index.ts';
import { startFixedWindowServer } from '../test/helpers/fixed-window-server.ts';
import { startRedis } from '../test/helpers/redis.ts';
import { runWorkers } from '../test/helpers/shared-gate-workers.ts';

const WINDOW_MS = 2_000;
const SECONDS = Math.min(60, Math.max(4, Number(process.env.BENCH_SECONDS ?? 8)));
/** `BENCH_COUNTS=8` (or `1,8`) runs some of the points, e.g. to repeat one. */
const COUNTS = (process.env.BENCH_COUNTS ?? '1,2,4,8').split(',').map(Number);
if (!COUNTS.every((n) => Number.isInteger(n) && n >= 1 && n <= 16)) {
  console.error(`shared-gate: BENCH_COUNTS must be process counts from 1 to 16 separated by commas, got ${JSON.stringify(process.env.BENCH_COUNTS)}`);
  process.exit(64);
}
const FIXED_LIMIT = 100;
const BUCKET = { limit: 300, burst: 500 };
const BUCKET_LABEL = 'token bucket (sandbox, 300/500 per 2 s)';
const GATES_LABEL = 'gates only (in-process bucket, 1 ms each way)';
const FIXED_LABEL = `fixed windows (${FIXED_LIMIT} per 2 s < basic 300)`;

interface Row {
  server: string;
  n: number;
  limited: number;
  served: number;
  allowed: number;
  p50: number;
  p99: number;
}

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** What a server let through and refused (429) over the measured span, and what its limit allowed in it. */
interface Span {
  served: number;
  limited: number;
  allowed: number;
}

function row(server: string, n: number, takeMs: number[], span: Span): Row {
  const takes = takeMs.toSorted((a, b) => a - b);
  return { server, n, ...span, p50: quantile(takes, 0.5), p99: quantile(takes, 0.99) };
}

const sleepUntil = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));

/**
 * Reads a token bucket (in this process) when the first window ends and when the run ends: the
 * requests it let through and refused between, and what it allowed then, i.e. what it held at
 * the first reading plus its refill until the second. Each reading falls between two of its
 * requests, and the refill runs over the time that really passed between them.
 */
async function bucketSpan(read: () => BucketState | undefined, start: number): Promise<Span> {
  const readAt = async (at: number) => {
    await sleepUntil(at);
    return { at: Date.now(), state: read() ?? { tokens: BUCKET.burst, allowed: 0, refused: 0 } };
  };
  const from = await readAt(start + WINDOW_MS);
  const to = await readAt(start + SECONDS * 1_000);
  return {
    served: to.state.allowed - from.state.allowed,
    limited: to.state.refused - from.state.refused,
    allowed: from.state.tokens + ((to.at - from.at) * BUCKET.limit) / WINDOW_MS,
  };
}

/** One point against a fresh sandbox (its token bucket): `redisUrl` undefined runs the local gate alone. */
async function bucketRow(label: string, n: number, redisUrl: string | undefined): Promise<Row> {
  const key = demoKey('basic', { name: `bench-${n}-${redisUrl ? 'shared' : 'local'}` });
  const sandbox = await startSandbox({ port: 0, apiKeys: [key], rateWindowMs: WINDOW_MS, speed: 0 });
  try {
    let span: Promise<Span> | undefined;
    const { results } = await runWorkers(n, { baseUrl: sandbox.baseUrl, apiKey: key.key, redisUrl, tier: 'basic', windowMs: WINDOW_MS, concurrency: 6 }, SECONDS, (start) => {
      span = bucketSpan(() => sandbox.rateBucket(`key:${key.name}`), start);
      return Promise.resolve();
    });
    return row(
      label,
      n,
      results.flatMap((x) => x.result.takeMs),
      await span!,
    );
  } finally {
    await sandbox.close();
  }
}

/**
 * The gates alone, without HTTP or a process each (so without the CPU a 2-core machine runs
 * short of): N rate gates in this process, each with its own Redis connection and id, 6 calls
 * at a time each, against the sandbox's token bucket called in place 1 ms after admission and
 * answering 1 ms later. The same figures as `bucketRow` (no take latency: it would be the
 * in-process run's); what the gates leave unused.
 */
async function gateOnlyRow(label: string, n: number, redisUrl: string | undefined): Promise<Row> {
  const limiter = new BucketLimiter(WINDOW_MS, Date.now, true);
  const budgets = redisUrl ? Array.from({ length: n }, (_, i) => new RedisBudgets({ url: redisUrl, processId: `bench-gate-${i}` })) : [];
  await Promise.all(budgets.map((b) => b.ready()));
  const digest = credentialDigest(`bench-gates-${n}-${Date.now()}`);
  const start = Date.now();
  const end = start + SECONDS * 1_000;
  const abort = new AbortController();
  setMaxListeners(n * 6 + 10, abort.signal);
  const timer = setTimeout(() => abort.abort(), SECONDS * 1_000);
  const pause = () => new Promise((resolve) => setTimeout(resolve, 1));
  try {
    const span = bucketSpan(() => limiter.state('bench'), start);
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const gate = new RateGate({ ...BUCKET, windowMs: WINDOW_MS, shared: budgets[i]?.budget(digest, 'bench') });
        await Promise.all(
          Array.from({ length: 6 }, async () => {
            while (Date.now() < end) {
              const permit = await gate.acquire('normal', abort.signal).catch(() => undefined);
              if (!permit) return;
              await pause();
              const decision = limiter.take('bench', BUCKET);
              await pause();
              gate.release(permit, { status: decision.allowed ? 200 : 429, headers: decision.headers });
            }
          }),
        );
      }),
    );
    return row(label, n, [], await span);
  } finally {
    clearTimeout(timer);
    await Promise.all(budgets.map((b) => b.close()));
  }
}

/** One point against a fresh fixed-window server; what it let through, refused and allowed counted in its whole windows after the first. */
async function fixedRow(label: string, n: number, redisUrl: string | undefined): Promise<Row> {
  const server = await startFixedWindowServer({ limit: FIXED_LIMIT, windowMs: WINDOW_MS });
  try {
    const { start, end, results } = await runWorkers(n, { baseUrl: server.baseUrl, apiKey: `bench-fixed-${n}`, redisUrl, tier: 'basic', windowMs: WINDOW_MS, concurrency: 6 }, SECONDS);
    const first = server.windowOf(start) + 1;
    const last = server.windowOf(end) - 1;
    const inSpan = (perWindow: number[]) => perWindow.slice(first, last + 1).reduce((a, b) => a + b, 0);
    const limited = inSpan(server.rateLimitedPerWindow());
    return row(
      label,
      n,
      results.flatMap((x) => x.result.takeMs),
      { served: inSpan(server.perWindow()) - limited, limited, allowed: (last - first + 1) * FIXED_LIMIT },
    );
  } finally {
    await server.close();
  }
}

export async function run(): Promise<void> {
  const loadAtStart = loadavg()[0]!.toFixed(1);
  const redis = await startRedis();
  const rows: Row[] = [];
  try {
    // The reference: what one process reaches with its local gate alone, on the same server in the same run.
    rows.push(await bucketRow(`${BUCKET_LABEL}, local gate alone`, 1, undefined));
    for (const n of COUNTS) rows.push(await bucketRow(BUCKET_LABEL, n, redis.url));
    rows.push(await gateOnlyRow(`${GATES_LABEL}, local gate alone`, 1, undefined));
    for (const n of COUNTS) rows.push(await gateOnlyRow(GATES_LABEL, n, redis.url));
    rows.push(await fixedRow(`${FIXED_LABEL}, local gate alone`, 1, undefined));
    for (const n of COUNTS) rows.push(await fixedRow(FIXED_LABEL, n, redis.url));
  } finally {
    await redis.stop();
  }
  console.log(
    `shared-gate: N processes on one key, 6 calls at a time each, ${SECONDS} s per point, window ${WINDOW_MS} ms; figures after the first window; machine load average ${loadAtStart} at start, ${loadavg()[0]!.toFixed(1)} at end (${cpus().length} cores)`,
  );
  console.log(`  ${'server'.padEnd(60)} ${'N'.padStart(2)}  ${'429s'.padStart(5)}  ${'served'.padStart(6)} / ${'allowed'.padStart(7)}  utilization  shared take p50 / p99 (ms)`);
  for (const r of rows) {
    console.log(
      `  ${r.server.padEnd(60)} ${String(r.n).padStart(2)}  ${String(r.limited).padStart(5)}  ${String(r.served).padStart(6)} / ${String(Math.round(r.allowed)).padStart(7)}  ${((100 * r.served) / r.allowed).toFixed(1).padStart(9)} %  ${r.p50.toFixed(2).padStart(8)} / ${r.p99.toFixed(2)}`.replaceAll(
        'NaN',
        '-',
      ),
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
