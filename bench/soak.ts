/**
 * The whole daemon (poller, detectors, example strategies, a webhook sink, retention) against
 * a sandbox whose market runs an hour per second, for `SOAK_S` seconds of polling every job
 * each second: heap and RSS after a GC every tenth of the run. A leak shows as a climb.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDaemon } from '../src/cli/daemon.ts';
import type { Config } from '../src/config/index.ts';
import { silentLogger, systemClock } from '../src/core/index.ts';
import { startSandbox } from '../src/sandbox/index.ts';

const SOAK_S = Number(process.env.SOAK_S ?? 60);
const gc = (globalThis as { gc?: () => void }).gc;

export async function run(): Promise<void> {
  const sandbox = await startSandbox({ port: 0, seed: 3, speed: 3_600, rateLimits: false });
  let alerts = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      alerts++;
      res.end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const dir = mkdtempSync(join(tmpdir(), 'indexbot-soak-'));
  const config: Config = {
    file: undefined,
    baseUrl: sandbox.baseUrl,
    tier: 'enterprise',
    tierExplicit: true,
    enterpriseLimits: { limit: 100_000, burst: 100_000 },
    windowMs: 60_000,
    db: join(dir, 'soak.db'),
    indexes: 'all',
    intervalsMs: { rebalancing: 1_000, composition: 1_000, performance: 1_000, indexes: 10_000, tokens: 5_000 },
    driftThreshold: 0.02,
    shutdownGraceMs: 5_000,
    retentionDays: 30,
    logLevel: 'warn',
    logFormat: 'json',
    apiKey: sandbox.keys.enterprise,
    walletKeypairPath: undefined,
    alerts: { sinks: [{ type: 'webhook', name: 'hook', url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` }], sinkNames: ['hook'], giveUpAfterMs: 86_400_000 },
    strategies: {
      dir: 'strategies',
      explicit: true,
      onError: 'fail',
      onUnknownName: 'fail',
      params: {},
      disabled: [],
      timeoutMs: 5_000,
      maxAttempts: 3,
      paper: { initialCash: 10_000, feeBps: 10, slippageBps: 5 },
    },
  };
  const daemon = await startDaemon(config, { logger: silentLogger, strategyClock: { ...systemClock, now: () => sandbox.clock.now() } });
  const samples: { s: number; heapMiB: number; rssMiB: number; requests: number; events: number }[] = [];
  const started = Date.now();
  for (let i = 1; i <= 10; i++) {
    await new Promise((r) => setTimeout(r, (SOAK_S * 1000) / 10));
    gc?.();
    const m = process.memoryUsage();
    samples.push({ s: Math.round((Date.now() - started) / 1000), heapMiB: m.heapUsed / 2 ** 20, rssMiB: m.rss / 2 ** 20, requests: sandbox.counters().total, events: daemon.store.lastEventSeq() });
  }
  await daemon.stop();
  await sandbox.close();
  await new Promise((r) => receiver.close(r));
  rmSync(dir, { recursive: true, force: true });
  console.log(`soak: the daemon for ${SOAK_S} s against a sandbox at an hour per second${gc ? '' : ' (run with --expose-gc for steady heap figures)'}`);
  for (const x of samples)
    console.log(
      `  ${String(x.s).padStart(4)} s  heap ${x.heapMiB.toFixed(1).padStart(6)} MiB  rss ${x.rssMiB.toFixed(1).padStart(6)} MiB  ${String(x.requests).padStart(6)} requests  ${String(x.events).padStart(5)} events`,
    );
  const [first, last] = [samples[1]!, samples[samples.length - 1]!];
  console.log(
    `  heap from ${first.s} s to ${last.s} s: ${last.heapMiB - first.heapMiB >= 0 ? '+' : ''}${(last.heapMiB - first.heapMiB).toFixed(1)} MiB over ${last.requests - first.requests} requests; ${alerts} webhook alerts delivered`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
