import { describe, expect, it } from 'vitest';
import { type SinkConfig, describeChanges, unmatchableFilterNames } from '../../src/alerts/index.ts';

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

describe('alert filters that can never match', () => {
  it('names a strategy not run and an index not followed, each with what there is; a list not known here is not checked', () => {
    const sinks: SinkConfig[] = [
      { type: 'console', name: 'ops', filter: { strategyAlerts: ['a', 'typo'], indexes: ['sindex', 'zz'] } },
      { type: 'console', name: 'all', filter: { strategyAlerts: true } },
    ];
    expect(unmatchableFilterNames(sinks, ['a', 'b'], ['sindex'])).toEqual([
      'alert sink "ops": filter.strategyAlerts "typo" is no strategy this bot runs (a, b)',
      'alert sink "ops": filter.indexes "zz" is no index this bot follows (sindex)',
    ]);
    // A collector runs no strategy (its runners do); a runner polls no index.
    expect(unmatchableFilterNames(sinks, undefined, ['sindex'])).toEqual(['alert sink "ops": filter.indexes "zz" is no index this bot follows (sindex)']);
    expect(unmatchableFilterNames(sinks, [], undefined)).toEqual([
      'alert sink "ops": filter.strategyAlerts "a" is no strategy this bot runs (none)',
      'alert sink "ops": filter.strategyAlerts "typo" is no strategy this bot runs (none)',
    ]);
  });
});
