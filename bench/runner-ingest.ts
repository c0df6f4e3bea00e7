/**
 * How fast a strategies runner (`run --role strategies`, its own process) takes events from
 * the Redis Stream: N rebalance announcements are published at once while it runs, and the
 * time is from the publish to the moment its `counts` strategy's cursor (read from the
 * runner's database) reaches the last of them. Events per second = N / that time.
 * - counts alone: what a healthy runner keeps up with (`BENCH_RUNNER_EVENTS`, default 2,000);
 * - counts beside `broken` (throws on every event: three tries with the runtime's backoff of
 *   0.5 s then 1 s between them, then parked): whether the broken one holds the other up (40 events).
 */
import { Redis } from 'ioredis';
import { type DaemonProcess, readDb, sandboxConfig, spawnDaemon, waitFor } from '../test/helpers/daemon.ts';
import { publishEvents } from '../test/helpers/event-stream.ts';
import { startRedis } from '../test/helpers/redis.ts';
import { tempDbPath } from '../test/helpers/temp-db.ts';

const EVENTS = Math.min(20_000, Math.max(100, Number(process.env.BENCH_RUNNER_EVENTS ?? 2_000)));
const STRATEGIES = new URL('./strategies/runner', import.meta.url).pathname;

async function row(label: string, events: number, disabled: string[]): Promise<void> {
  const redis = await startRedis();
  const admin = new Redis(redis.url);
  const db = tempDbPath();
  // A runner reaches no API server: an address where nothing listens.
  const config = sandboxConfig({ baseUrl: 'http://127.0.0.1:1/v1' }, db, { strategies: { dir: STRATEGIES, disabled } });
  let runner: DaemonProcess | undefined;
  try {
    runner = spawnDaemon(['--config', config, '--role', 'strategies', '--group', 'bench'], { INDEXBOT_EVENTS_URL: redis.url });
    const started = runner;
    await waitFor('the runner running', () => /indexbot running/.test(started.output()), 60_000, 50).catch((e) => Promise.reject(new Error(`${e.message}: ${started.output().slice(-1500)}`)));
    const t0 = performance.now();
    await publishEvents(admin, 1, events, 'rebalance.announced', 'bench');
    const counted = () => readDb(db, (d) => (d.prepare("SELECT seq FROM cursors WHERE consumer = 'strategy:counts'").get() as { seq: number } | undefined)?.seq ?? 0);
    await waitFor('counts to pass every event', () => counted() >= events, 120_000, 10);
    const seconds = (performance.now() - t0) / 1000;
    console.log(
      `  ${label.padEnd(34)} ${String(events).padStart(6)} events  ${seconds.toFixed(2).padStart(6)} s  ${Math.round(events / seconds)
        .toString()
        .padStart(6)} events/s`,
    );
  } finally {
    runner?.child.kill('SIGTERM');
    await runner?.exited;
    admin.disconnect();
    await redis.stop();
  }
}

console.log("runner ingest: events published to the Redis Stream at once, until the runner's `counts` strategy has passed the last (its own process, a local redis-server)");
await row('counts alone', EVENTS, ['broken']);
await row('counts beside broken (throws)', 40, []);
