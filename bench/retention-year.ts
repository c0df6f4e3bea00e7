/**
 * The cache's size over a year of premium-tier polling of 8 indexes, with retention: a
 * performance point and a `performance.updated` event per index each minute (premium polls
 * performance every 60 s), a rebalance announced and completed per index each week, a
 * strategy and an alert sink that keep up with the log, and the retention pass once a
 * simulated day at the default 30 days. Composition snapshots are left out: their share is
 * `bench/ingest.ts`'s size per snapshot times the snapshots kept (retention held them
 * before). `YEAR_DAYS` shortens the run.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/core/index.ts';
import type { NewEvent } from '../src/detect/index.ts';
import { RetentionJob, SnapshotStore } from '../src/store/index.ts';

const INDEXES = 8;
const DAYS = Number(process.env.YEAR_DAYS ?? 365);
const RETENTION_DAYS = 30;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 1);

function sizeMb(path: string): number {
  let bytes = 0;
  for (const f of [path, `${path}-wal`]) {
    try {
      bytes += statSync(f).size;
    } catch {
      // no WAL file
    }
  }
  return bytes / 1e6;
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'indexbot-year-'));
  const path = join(dir, 'year.db');
  const store = SnapshotStore.open(path);
  const clock = new ManualClock(T0);
  const retention = new RetentionJob({ store, days: RETENTION_DAYS, batch: 5_000, clock });
  const started = performance.now();
  let written = 0;
  let sizeAtRetention = 0;
  for (let day = 0; day < DAYS; day++) {
    store.transaction(() => {
      for (let m = 0; m < 1_440; m++) {
        const at = T0 + day * DAY + m * 60_000;
        for (let x = 0; x < INDEXES; x++) {
          const indexId = `idx${x}`;
          const nav = 100 + Math.sin(at / 3.6e6 + x);
          const returns = { '1h': nav / 1e4, '24h': nav / 1e3, '7d': nav / 1e2, '30d': nav / 10 };
          store.insertPerformance(null as never, { index_id: indexId, as_of: new Date(at).toISOString(), nav, returns } as never);
          const events: NewEvent[] = [
            { id: `performance.updated:${indexId}:${at}`, type: 'performance.updated', indexId, occurredAt: at, detectedAt: at, payload: { nav, returns, asOf: at } } as NewEvent,
          ];
          if (m === 0 && day % 7 === x % 7) {
            const payload = { rebalanceId: `rb_${indexId}_${day}`, announcedAt: at, effectiveAt: at + 3_600_000, changes: [] } as never;
            events.push({ id: `rebalance.announced:${indexId}:${day}`, type: 'rebalance.announced', indexId, occurredAt: at, detectedAt: at, payload } as NewEvent);
            events.push({ id: `rebalance.completed:${indexId}:${day}`, type: 'rebalance.completed', indexId, occurredAt: at + 3_600_000, detectedAt: at + 3_600_000, payload } as NewEvent);
          }
          written += 1 + store.appendEvents(events).length;
        }
      }
      const end = T0 + (day + 1) * DAY;
      store.setCursor('strategy:front-run', store.lastEventSeq(), end);
      store.setCursor('alert:hook', store.lastEventSeq(), end);
    });
    await clock.advance(DAY);
    if (day + 1 === RETENTION_DAYS) sizeAtRetention = sizeMb(path);
    await retention.runOnce();
  }
  const counts = store.eventCounts();
  const kept = Object.values(counts).reduce((a, b) => a + (b ?? 0), 0);
  store.close();
  console.log(`retention over ${DAYS} simulated days, ${INDEXES} indexes at premium intervals (performance each 60 s), retentionDays ${RETENTION_DAYS}, pruned daily:`);
  console.log(`  rows written (performance points and events)   ${written.toLocaleString('en-US').padStart(12)}`);
  console.log(
    `  events kept                                    ${kept.toLocaleString('en-US').padStart(12)}   (${counts['performance.updated'] ?? 0} performance.updated, ${counts['rebalance.announced'] ?? 0} announced, ${counts['rebalance.completed'] ?? 0} completed)`,
  );
  console.log(`  database file (+ WAL) at day ${RETENTION_DAYS}, before any prune ${sizeAtRetention.toFixed(1).padStart(9)} MB`);
  console.log(`  database file (+ WAL) after ${DAYS} days                ${sizeMb(path).toFixed(1).padStart(9)} MB   (built in ${((performance.now() - started) / 1000).toFixed(0)} s)`);
  rmSync(dir, { recursive: true, force: true });
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
