import { performanceUpdated, rebalanceAnnounced, rebalanceCompleted, runStrategy } from 'indexbot/testing';
import { describe, expect, it } from 'vitest';
import strategy from '../strategies/follow-rebalance.ts';

const DAY = 86_400_000;
const start = Date.UTC(2026, 0, 1);
const changes = [
  { address: 'TokenA', symbol: 'A', action: 'add' as const, oldWeight: 0, newWeight: 0.1 },
  { address: 'TokenB', symbol: 'B', action: 'decrease' as const, oldWeight: 0.3, newWeight: 0.2 },
];
const announced = rebalanceAnnounced({ rebalanceId: 'rb_1', changes, at: start, effectiveAt: start + DAY });
const completed = rebalanceCompleted({ rebalanceId: 'rb_1', changes, at: start + DAY });

describe('follow-rebalance', () => {
  it('buys what a rebalance adds and sells it when the rebalance completes', async () => {
    const result = await runStrategy({ strategy, events: [announced, completed], prices: { TokenA: 2 } });
    expect(result.fills.map((f) => [f.side, f.instrument])).toEqual([
      ['buy', 'token:TokenA'],
      ['sell', 'token:TokenA'],
    ]);
    expect(result.positions).toEqual([]);
    expect(result.state).toEqual({});
    expect(result.parked).toEqual([]);
  });

  it('buys once a price is known, if that is before the rebalance takes effect', async () => {
    const result = await runStrategy({
      strategy,
      events: [announced, performanceUpdated({ nav: 1, at: start + 3_600_000 })],
      prices: (_address, at) => (at < start + 3_600_000 ? undefined : 2),
    });
    expect(result.fills.map((f) => [f.side, f.instrument, f.at])).toEqual([['buy', 'token:TokenA', start + 3_600_000]]);
    // Waiting for a price places no order the broker would refuse.
    expect(result.rejections).toEqual([]);
  });
});
