/**
 * Backtest replay speed on one year of hourly history for 10 indexes (87,600 points of 15
 * constituents, weekly rebalances): a bare better-sqlite3 iterate over the same rows, the
 * replay into a no-op strategy, and a full run of rebalance-front-run. Prints peak RSS.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { runBacktest } from '../src/backtest/index.ts';
import type { HistoryPoint, Rebalance } from '../src/contract/index.ts';
import { SnapshotStore } from '../src/store/index.ts';
import { type LoadedStrategy, defineStrategy, loadStrategies } from '../src/strategy/index.ts';
import { silentLogger } from '../src/core/index.ts';

const INDEXES = 10;
const CONSTITUENTS = 15;
const FROM = Date.UTC(2025, 0, 1);
const HOURS = 365 * 24;
const TO = FROM + (HOURS - 1) * 3_600_000;

/** A small seeded PRNG, so every run replays the same market. */
function mulberry32(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function buildCache(path: string): void {
  const random = mulberry32(42);
  const store = SnapshotStore.open(path);
  const tokens = Array.from({ length: 60 }, (_, i) => ({ address: `Tok${i}`.padEnd(44, 'x'), symbol: `T${i}`, price: 1 + random() * 50 }));
  for (let x = 0; x < INDEXES; x++) {
    const indexId = `idx${x}`;
    const members = Array.from({ length: CONSTITUENTS }, (_, k) => tokens[(x * 5 + k) % tokens.length]!);
    const points: HistoryPoint[] = [];
    for (let h = 0; h < HOURS; h++) {
      for (const m of members) m.price *= 1 + (random() - 0.5) * 0.01;
      const total = members.reduce((a, m) => a + m.price, 0);
      points.push({
        timestamp: new Date(FROM + h * 3_600_000).toISOString(),
        nav: total,
        constituents: members.map((m) => ({ address: m.address, symbol: m.symbol, price_usd: m.price, weight: m.price / total })),
      } as HistoryPoint);
    }
    const rebalances: Rebalance[] = [];
    for (let week = 1; week < 52; week++) {
      const effective = FROM + week * 7 * 86_400_000;
      const changes = members.slice(0, 3).map((m, k) => ({ address: m.address, symbol: m.symbol, action: 'increase', old_weight: 1 / CONSTITUENTS, new_weight: 1 / CONSTITUENTS + 0.01 * (k + 1) }));
      rebalances.push({
        id: `rb_${indexId}_${week}`,
        index_id: indexId,
        status: 'completed',
        announced_at: new Date(effective - 3 * 86_400_000).toISOString(),
        effective_at: new Date(effective).toISOString(),
        completed_at: new Date(effective).toISOString(),
        reason: 'scheduled',
        changes,
      } as Rebalance);
    }
    store.transaction(() => {
      store.history.insertPoints(indexId, '1h', points);
      for (const r of rebalances) store.backfillRebalance(r, TO);
    });
  }
  store.close();
}

const noop: LoadedStrategy = {
  file: new URL(import.meta.url).pathname,
  params: {},
  strategy: defineStrategy({
    name: 'noop',
    params: z.object({}),
    on: { 'rebalance.announced': () => {}, 'rebalance.completed': () => {}, 'rebalance.cancelled': () => {}, 'composition.drift': () => {}, 'performance.updated': () => {} },
  }),
};

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'indexbot-backtest-'));
  const path = join(dir, 'cache.db');
  // Built by another process, so the peak RSS below is the backtest's own.
  execFileSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--build', path], { stdio: 'inherit' });
  const indexes = Array.from({ length: INDEXES }, (_, x) => `idx${x}`);
  console.log(`backtest: ${INDEXES} indexes x ${HOURS} hourly points (${CONSTITUENTS} constituents), weekly rebalances`);

  const db = new Database(path, { readonly: true });
  let t0 = performance.now();
  let rows = 0;
  for (const _ of db.prepare("SELECT index_id, ts, nav, constituents FROM history_points WHERE interval = '1h' ORDER BY ts, index_id").raw().iterate()) rows++;
  const bareS = (performance.now() - t0) / 1000;
  db.close();
  console.log(`  bare better-sqlite3 iterate   ${(rows / bareS).toFixed(0).padStart(9)} rows/s   (${rows} rows in ${bareS.toFixed(3)} s)`);

  const cache = SnapshotStore.open(path, { readonly: true });
  const [frontRun] = (await loadStrategies('strategies', { logger: silentLogger })).filter((s) => s.strategy.name === 'rebalance-front-run');
  for (const strategy of [noop, frontRun!]) {
    t0 = performance.now();
    const r = await runBacktest({ cache, strategy, indexes, from: FROM, to: TO, cash: 1e6 });
    const s = (performance.now() - t0) / 1000;
    const events = Object.values(r.eventCounts).reduce((a, b) => a + b, 0);
    console.log(
      `  ${strategy.strategy.name.padEnd(28)}  ${(r.replayed / s).toFixed(0).padStart(9)} items/s  ${(events / s).toFixed(0).padStart(9)} events/s  total ${s.toFixed(2)} s` +
        `  (${r.replayed} items, ${events} events, ${r.fills.length} fills${strategy === noop ? `; ${(r.replayed / s / (rows / bareS)).toFixed(2)}x bare` : ''})`,
    );
  }
  cache.close();
  console.log(`  peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
  rmSync(dir, { recursive: true, force: true });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === '--build') buildCache(process.argv[3]!);
  else await run();
}
