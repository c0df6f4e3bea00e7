import type { HistoryPoint, Rebalance } from '../../src/contract/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { tempDbPath } from './temp-db.ts';

export const H = 3_600_000;
export const T0 = Date.UTC(2025, 2, 1);
export const A = 'A'.repeat(44);
export const B = 'B'.repeat(44);

/**
 * Five days of hourly points for index `x` (tokens A and B) and `y` (B only). A rebalance of
 * x is announced at hour 30 and takes effect at hour 60, raising A; A's price doubles at
 * hour 80, so the index value jumps there: a strategy that saw the future would buy before.
 * `hours` makes a longer history of the same kind.
 */
export function buildCache(options: { skipHours?: [number, number]; hours?: number } = {}): string {
  const path = tempDbPath('cache.db');
  const store = SnapshotStore.open(path);
  const points = (indexId: string): HistoryPoint[] =>
    Array.from({ length: options.hours ?? 120 }, (_, h) => h)
      .filter((h) => !options.skipHours || h < options.skipHours[0] || h > options.skipHours[1])
      .map((h) => {
        const pa = h >= 80 ? 20 : 10;
        const pb = 5 + (h % 7) * 0.01;
        const cs =
          indexId === 'x'
            ? [
                { address: A, symbol: 'AAA', price_usd: pa, weight: h >= 60 ? 0.6 : 0.5 },
                { address: B, symbol: 'BBB', price_usd: pb, weight: h >= 60 ? 0.4 : 0.5 },
              ]
            : [{ address: B, symbol: 'BBB', price_usd: pb, weight: 1 }];
        return { timestamp: new Date(T0 + h * H).toISOString(), nav: cs.reduce((s, c) => s + c.price_usd * c.weight, 0), constituents: cs } as HistoryPoint;
      });
  const rebalance: Rebalance = {
    id: 'rb_x_1',
    index_id: 'x',
    status: 'completed',
    announced_at: new Date(T0 + 30 * H).toISOString(),
    effective_at: new Date(T0 + 60 * H).toISOString(),
    completed_at: new Date(T0 + 60 * H).toISOString(),
    reason: 'scheduled',
    changes: [
      { address: A, symbol: 'AAA', action: 'increase', old_weight: 0.5, new_weight: 0.6 },
      { address: B, symbol: 'BBB', action: 'decrease', old_weight: 0.5, new_weight: 0.4 },
    ],
  } as Rebalance;
  store.transaction(() => {
    store.history.insertPoints('x', '1h', points('x'));
    store.history.insertPoints('y', '1h', points('y'));
    store.upsertRebalance(rebalance, T0 + 200 * H);
  });
  store.close();
  return path;
}
