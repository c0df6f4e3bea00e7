/**
 * Drives the client with more demand than budget against local servers that enforce a
 * limit on a short window, and prints per mode: requests sent, 429s received and
 * utilization (successful requests / what the limit allowed in that time).
 *
 * - bucket: the sandbox (token bucket as in the contract), basic tier 300/500 per window.
 * - fixed-window: a server with fixed windows and a limit of 100, a third of what the
 *   client was configured for (basic, 300/500).
 */
import { IndexClient } from '../src/api/index.ts';
import { demoKey, startSandbox } from '../src/sandbox/index.ts';
import { startFixedWindowServer } from '../test/helpers/fixed-window-server.ts';

const WINDOW_MS = 2_000;
const DURATION_MS = Number(process.env.BENCH_SECONDS ?? 10) * 1_000;
const WORKERS = 16;

interface Outcome {
  mode: string;
  sent: number;
  rateLimited: number;
  ok: number;
  allowed: number;
  seconds: number;
}

/**
 * Workers call in a loop until `end`, a window boundary (windows counted from `windowStart`),
 * so the last window is a whole one; only responses received by then count (requests still
 * held by the gate do not).
 */
async function drive(client: IndexClient, call: (c: IndexClient) => Promise<unknown>, windowStart = 0): Promise<{ ok: number; first: number; end: number }> {
  let ok = 0;
  const first = Date.now();
  const end = windowStart + Math.ceil((first + DURATION_MS - windowStart) / WINDOW_MS) * WINDOW_MS;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (Date.now() < end) {
        await call(client);
        if (Date.now() <= end) ok++;
      }
    }),
  );
  return { ok, first, end };
}

async function bucketMode(): Promise<Outcome> {
  const key = demoKey('basic', { name: 'bench' });
  const sandbox = await startSandbox({ port: 0, apiKeys: [key], rateWindowMs: WINDOW_MS, speed: 0 });
  try {
    const client = new IndexClient({ baseUrl: sandbox.baseUrl, apiKey: key.key, tier: 'basic', windowMs: WINDOW_MS });
    const { ok, first, end } = await drive(client, (c) => c.getComposition('sindex'));
    const counters = sandbox.counters();
    const elapsed = end - first;
    return { mode: 'token bucket (sandbox, 300/500)', sent: counters.total, rateLimited: counters.rateLimited, ok, allowed: Math.floor(500 + (300 * elapsed) / WINDOW_MS), seconds: elapsed / 1000 };
  } finally {
    await sandbox.close();
  }
}

/** The fixed-window server the shared-budget tests and bench use, limit 100 per window. */
async function fixedWindowMode(): Promise<Outcome> {
  const LIMIT = 100;
  const server = await startFixedWindowServer({ limit: LIMIT, windowMs: WINDOW_MS });
  try {
    const client = new IndexClient({ baseUrl: server.baseUrl, apiKey: 'bench-key', tier: 'basic', windowMs: WINDOW_MS });
    const { ok, first, end } = await drive(client, (c) => c.getComposition('sindex'), server.windowStart);
    const windows = server.windowOf(end) - server.windowOf(first);
    return { mode: 'fixed windows (limit 100 < configured 300)', sent: server.sent(), rateLimited: server.rateLimited(), ok, allowed: windows * LIMIT, seconds: (end - first) / 1000 };
  } finally {
    await server.close();
  }
}

export async function run(): Promise<void> {
  console.log(`rate-gate: ${WORKERS} workers, window ${WINDOW_MS} ms, ${DURATION_MS / 1000} s per mode`);
  for (const mode of [bucketMode, fixedWindowMode]) {
    const o = await mode();
    const utilization = (100 * o.ok) / o.allowed;
    console.log(
      `  ${o.mode.padEnd(44)} sent ${String(o.sent).padStart(5)}  429s ${String(o.rateLimited).padStart(3)}  ok ${String(o.ok).padStart(5)} / allowed ${String(o.allowed).padStart(5)} in ${o.seconds.toFixed(1)} s  utilization ${utilization.toFixed(1)} %`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
