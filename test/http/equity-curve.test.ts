import { describe, expect, it } from 'vitest';
import { decimal } from '../../src/core/index.ts';
import { equityCurve } from '../../src/http/queries.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const H = 3_600_000;
const T0 = Date.UTC(2026, 0, 1);

/** A paper account with `count` fills an hour apart: a token bought, then sold, again and again. */
function storeWithFills(count: number): SnapshotStore {
  const store = SnapshotStore.open(tempDbPath());
  store.strategies.openAccount('strategy:busy', decimal(10_000));
  store.transaction(() => {
    for (let i = 0; i < count; i++) {
      const price = decimal(1 + (i % 7) / 10);
      store.strategies.insertFill({
        account: 'strategy:busy',
        eventId: null,
        instrument: 'token:Tok',
        side: i % 2 === 0 ? 'buy' : 'sell',
        quantity: decimal(10),
        price,
        feeUsd: decimal('0.01'),
        at: T0 + i * H,
      });
    }
  });
  return store;
}

describe('a strategy’s equity curve for the dashboard', () => {
  it('has at most the points asked for, however many fills a months-long run made, ending where the dense curve ends', () => {
    const store = storeWithFills(3_000);
    try {
      const end = T0 + 3_000 * H;
      const curve = equityCurve(store, 'busy', end);
      // One point per fill made the page fetch and draw 3,000 points, and price each held position at each.
      expect(curve.length).toBeLessThanOrEqual(201);
      expect(curve.every((p, i) => i === 0 || p.t > curve[i - 1]!.t)).toBe(true);
      const dense = equityCurve(store, 'busy', end, 5_000);
      expect(dense.length).toBeGreaterThan(3_000);
      expect(curve.at(-1)).toEqual(dense.at(-1));
      expect(curve[0]!.t).toBe(T0);
    } finally {
      store.close();
    }
  });

  it('keeps every fill’s step when the fills are fewer than the points', () => {
    const store = storeWithFills(20);
    try {
      const curve = equityCurve(store, 'busy', T0 + 100 * H);
      const times = new Set(curve.map((p) => p.t));
      for (let i = 0; i < 20; i++) expect(times.has(T0 + i * H)).toBe(true);
    } finally {
      store.close();
    }
  });
});
