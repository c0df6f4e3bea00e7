/**
 * `indexbot/backtest`: a backtest from code.
 *
 *     const cache = openCache('data/indexbot.db');
 *     const result = await runBacktest({ cache, strategy: await loadStrategy('strategies/mine.ts', { holdHours: 6 }), indexes: ['sindex'], from, to });
 *     cache.close();
 *
 * Many runs over the same range (a parameter search of your own) load the strategy once and
 * give each run its params with `strategyWithParams(loaded, params)` (each `loadStrategy`
 * imports the file anew, and Node keeps every module it imported), and read the history once
 * with a `RecordedHistory`: `runBacktest({ cache, history: new RecordedHistory(cache, 256 * 2 ** 20), ... })`.
 * On worker threads, post `history.share()` to each, which replays the same memory with
 * `RecordedHistory.fromShared(cache, shared)`.
 */
export {
  runBacktest,
  openCache,
  buildReport,
  reportJson,
  renderHtml,
  renderTable,
  type BacktestOptions,
  type BacktestResult,
  type RunFill,
  type BacktestAlert,
  type BacktestReport,
  type IndexCoverage,
} from '../backtest/index.ts';
export { RecordedHistory, type HistorySource, type RebalanceTransition, type SharedHistory } from '../backtest/index.ts';
export { returnMetrics, strategyMetrics, type ReturnMetrics, type StrategyMetrics, type EquityPoint, type TradeFill } from '../backtest/index.ts';
export { loadStrategy, loadStrategies, strategyWithParams, type LoadedStrategy, type LoadOptions } from '../strategy/index.ts';
export { SnapshotStore } from '../store/index.ts';
/** What these throw: `instanceof` and `code` as from `indexbot/client`, which exports the whole hierarchy. */
export { IndexbotError, BacktestDataError, StoreError, StoreWriteError, StrategyError, type ErrorCode } from '../core/errors.ts';
