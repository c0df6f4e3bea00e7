import { describe, expect, it } from 'vitest';
import { describeChanges } from '../../src/alerts/index.ts';

describe('a rebalance’s changes in an alert', () => {
  it('show a reweighting with as many decimals as it takes to tell the two weights apart (the demo printed "BSOL 11.96% -> 11.96%")', () => {
    const line = describeChanges([
      { action: 'increase', address: 'A', symbol: 'JUP', oldWeight: 0.1, newWeight: 0.15 },
      { action: 'decrease', address: 'B', symbol: 'BSOL', oldWeight: 0.11962, newWeight: 0.11958 },
      { action: 'add', address: 'C', symbol: 'HNT', oldWeight: 0, newWeight: 0.0471 },
    ]);
    expect(line).toBe('added +HNT 4.71%; reweighted JUP 10.00% -> 15.00%, BSOL 11.962% -> 11.958%');
  });
});
