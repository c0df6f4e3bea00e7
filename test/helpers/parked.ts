import type { NewEvent } from '../../src/detect/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { StrategyRuntime, loadStrategies } from '../../src/strategy/index.ts';
import { captureLogger } from './fake-transport.ts';
import { tempDbPath } from './temp-db.ts';

/** The i-th of a run of rebalance announcements on sindex (seq i in a fresh log). */
export const announcement = (i: number): NewEvent => ({
  id: `rebalance.announced:sindex:rb_${i}`,
  type: 'rebalance.announced',
  indexId: 'sindex',
  occurredAt: i,
  detectedAt: i,
  payload: { rebalanceId: `rb_${i}`, announcedAt: i, effectiveAt: i + 1, reason: 'manual', changes: [] },
});

/**
 * A fresh database holding `count` announcements, delivered once (one attempt each) to the
 * strategies in `dir`: the ones that throw have them parked. Closed, for a CLI to open.
 */
export async function databaseWithParkedEvents(dir: string, count: number): Promise<string> {
  const db = tempDbPath();
  const store = SnapshotStore.open(db);
  try {
    store.appendEvents(Array.from({ length: count }, (_, i) => announcement(i + 1)));
    const strategies = await loadStrategies(dir, { logger: captureLogger().logger });
    await new StrategyRuntime({ store, strategies, maxAttempts: 1, retryBaseMs: 1 }).drain();
  } finally {
    store.close();
  }
  return db;
}
