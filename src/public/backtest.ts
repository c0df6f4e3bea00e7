/**
 * `indexbot/backtest`: a backtest from code.
 *
 *     const cache = openCache('data/indexbot.db');
 *     const result = await runBacktest({ cache, strategy: await loadStrategy('strategies/mine.ts', { holdHours: 6 }), indexes: ['sindex'], from, to });
 *     cache.close();
 */
export { runBacktest, openCache, buildReport, reportJson, renderHtml, renderTable, type BacktestOptions, type BacktestResult, type BacktestReport, type IndexCoverage } from '../backtest/index.ts';
export { returnMetrics, strategyMetrics, type ReturnMetrics, type StrategyMetrics, type EquityPoint, type TradeFill } from '../backtest/index.ts';
export { loadStrategy, loadStrategies, type LoadedStrategy, type LoadOptions } from '../strategy/index.ts';
export { SnapshotStore } from '../store/index.ts';
