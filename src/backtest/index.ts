export { runBacktest, type BacktestOptions, type BacktestResult, type IndexCoverage } from './replay.ts';
export { buildReport, reportJson, renderHtml, renderTable, formatTable, pct, fixed, REPORT_FORMAT, type BacktestReport } from './report.ts';
export {
  returnMetrics,
  strategyMetrics,
  drawdowns,
  dailyCloses,
  DAY_MS,
  type ValuePoint,
  type EquityPoint,
  type TradeFill,
  type ReturnMetrics,
  type StrategyMetrics,
} from './metrics.ts';
