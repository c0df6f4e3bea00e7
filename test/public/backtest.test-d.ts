import { describe, expectTypeOf, it } from 'vitest';
import {
  type BacktestOptions,
  type BacktestResult,
  type HistorySource,
  type LoadedStrategy,
  RecordedHistory,
  type SharedHistory,
  type SnapshotStore,
  loadStrategy,
  openCache,
  runBacktest,
} from 'indexbot/backtest';

describe('indexbot/backtest', () => {
  it('opens a cache and loads a strategy file into what runBacktest takes', () => {
    expectTypeOf(openCache).returns.toEqualTypeOf<SnapshotStore>();
    expectTypeOf(loadStrategy).returns.resolves.toEqualTypeOf<LoadedStrategy>();
    expectTypeOf<BacktestOptions['cache']>().toEqualTypeOf<SnapshotStore>();
    expectTypeOf<BacktestOptions['strategy']>().toEqualTypeOf<LoadedStrategy>();
    expectTypeOf(runBacktest).returns.resolves.toEqualTypeOf<BacktestResult>();
    expectTypeOf<BacktestResult['fills'][number]['eventId']>().toEqualTypeOf<string>();
  });

  it('takes the history of many runs over one range from a RecordedHistory', () => {
    expectTypeOf<RecordedHistory>().toMatchTypeOf<HistorySource>();
    expectTypeOf<BacktestOptions['history']>().toEqualTypeOf<HistorySource | undefined>();
    expectTypeOf(RecordedHistory).constructorParameters.toEqualTypeOf<[SnapshotStore, number]>();
    // Read ahead once, then replayed by other threads from the same memory.
    expectTypeOf<RecordedHistory['keep']>().returns.toEqualTypeOf<boolean>();
    expectTypeOf<RecordedHistory['share']>().returns.toEqualTypeOf<SharedHistory>();
    expectTypeOf(RecordedHistory.fromShared).parameters.toEqualTypeOf<[SnapshotStore, SharedHistory]>();
  });
});
