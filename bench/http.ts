/**
 * The daemon's HTTP face under load. The daemon runs in this process against a sandbox in
 * another; clients run in other processes too, so only serving them is counted here.
 * Measures requests per second of `/metrics` and `/api/v1/status` with the daemon polling,
 * and the lateness of poll jobs (start time minus due time; rebalancing and composition of 2 indexes polled
 * each second) with no client and with 200 open SSE clients receiving events.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../src/cli/daemon.ts';
import { loadConfig } from '../src/config/index.ts';
import { silentLogger } from '../src/core/index.ts';

const PHASE_S = Number(process.env.BENCH_HTTP_SECONDS ?? 20);
const RPS_S = Number(process.env.BENCH_HTTP_RPS_SECONDS ?? 5);
const SSE_CLIENTS = 200;
const PEER = fileURLToPath(new URL('./http-peer.ts', import.meta.url));

function peer(...args: string[]): { child: ChildProcess; line: () => Promise<string> } {
  const child = spawn(process.execPath, ['--import', 'tsx', PEER, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let waiting: ((l: string) => void) | undefined;
  let buffer = '';
  child.stdout!.on('data', (c: Buffer) => {
    buffer += c.toString();
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      const l = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      if (waiting) {
        waiting(l);
        waiting = undefined;
      } else lines.push(l);
    }
  });
  return { child, line: () => (lines.length > 0 ? Promise.resolve(lines.shift()!) : new Promise((r) => (waiting = r))) };
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const sandbox = peer('sandbox');
const sb = JSON.parse(await sandbox.line()) as { baseUrl: string; origin: string; key: string };
const dir = mkdtempSync(join(tmpdir(), 'indexbot-bench-http-'));
const configPath = join(dir, 'indexbot.json');
writeFileSync(
  configPath,
  JSON.stringify({
    baseUrl: sb.baseUrl,
    db: join(dir, 'bench.db'),
    tier: 'premium',
    rateWindowMs: 10_000,
    indexes: ['mindex', 'dindex'],
    intervals: { rebalancing: 1, composition: 1, performance: 5, indexes: 60, tokens: 60 },
    strategies: { dir: 'strategies' },
  }),
);
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
let lateness: number[] = [];
const daemon = await startDaemon(loadConfig({ config: configPath, http: `127.0.0.1:${port}` }, { INDEXBOT_API_KEY: sb.key }), {
  logger: silentLogger,
  onPoll: (p) => lateness.push(p.lateMs),
});
const rebalances = setInterval(() => {
  void fetch(`${sb.origin}/_sandbox/rebalance`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ index_id: 'mindex', effective_in_seconds: 3600 }) });
}, 2_000);

try {
  await sleep(5_000);
  lateness = [];
  await sleep(PHASE_S * 1000);
  const idle = lateness;

  const sse = peer('sse', String(SSE_CLIENTS), `${url}/api/v1/stream`);
  await sse.line();
  lateness = [];
  await sleep(PHASE_S * 1000);
  const withSse = lateness;
  sse.child.kill('SIGTERM');
  const received = JSON.parse(await sse.line()) as { open: number; bytes: number };

  const rps: Record<string, number> = {};
  for (const path of ['/metrics', '/api/v1/status']) {
    const client = peer('rps', `${url}${path}`, String(RPS_S), '8');
    const r = JSON.parse(await client.line()) as { ok: number; failed: number };
    rps[path] = r.ok / RPS_S;
  }

  const row = (label: string, xs: number[]) =>
    console.log(
      `http: poll lateness ${label.padEnd(22)} p50 ${pct(xs, 50).toFixed(0).padStart(4)} ms  p99 ${pct(xs, 99).toFixed(0).padStart(4)} ms  max ${Math.max(...xs)
        .toFixed(0)
        .padStart(4)} ms  (${xs.length} polls in ${PHASE_S} s)`,
    );
  row('no client', idle);
  row(`${SSE_CLIENTS} SSE clients`, withSse);
  console.log(`http: SSE clients moved poll p99 lateness by ${(pct(withSse, 99) - pct(idle, 99)).toFixed(0)} ms (goal < 50 ms); they received ${(received.bytes / 1024).toFixed(0)} KiB in all`);
  for (const [path, n] of Object.entries(rps)) console.log(`http: ${path.padEnd(15)} ${n.toFixed(0).padStart(6)} requests/s (8 keep-alive connections, daemon polling)`);
} finally {
  clearInterval(rebalances);
  await daemon.stop();
  sandbox.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
