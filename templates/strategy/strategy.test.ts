import { rebalanceAnnounced, runStrategy } from 'indexbot/testing';
import { describe, expect, it } from 'vitest';
import strategy from '../strategies/__NAME__.ts';

describe('__NAME__', () => {
  it('handles an announced rebalance without trading', async () => {
    const result = await runStrategy({
      strategy,
      events: [rebalanceAnnounced({ changes: [{ address: 'TokenA', symbol: 'A', action: 'add', oldWeight: 0, newWeight: 0.1 }] })],
      prices: { TokenA: 2 },
    });
    expect(result.parked).toEqual([]);
    expect(result.fills).toEqual([]);
  });
});
