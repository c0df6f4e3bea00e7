export { runBacktest, replayRange, edgeGaps, isLargeGap, defaultMaxGapMs, type BacktestOptions, type BacktestResult, type BacktestAlert, type IndexCoverage } from './replay.ts';
export { openCache } from './inputs.ts';
export { RecordedHistory, type HistorySource, type RebalanceTransition, type SharedHistory } from './recorded-history.ts';
export { buildReport, gapText, gapsInRun, reportJson, reportJsonChunks, reportSummary, REPORT_FORMAT, type BacktestReport, type ReportSummary } from './report.ts';
export { renderTable, formatTable, failureLine, pct, fixed, amount } from './table.ts';
export { renderHtml, escapeHtml, chartData, percentTicks, PAGE_TRADES } from './html.ts';
export {
  returnMetrics,
  strategyMetrics,
  strategyMetricsOf,
  relativeMetrics,
  monthlyReturns,
  drawdownPeriods,
  drawdowns,
  dailySeries,
  DAY_MS,
  ANNUALISED_METRICS,
  shortWindowWarning,
  type ValuePoint,
  type EquityPoint,
  type TradeFill,
  type ReturnMetrics,
  type StrategyMetrics,
  type RelativeMetrics,
  type DrawdownPeriod,
} from './metrics.ts';
export { FillLedger, type RunFill } from './fill-ledger.ts';
export { TradeBook, instrumentPnl, rejectionSummary, type TradeRow, type TradeStats, type InstrumentPnl } from './trades.ts';
export {
  runSweep,
  SweepSession,
  reportFiles,
  writeReportFiles,
  MAX_WORKERS,
  PARTIAL_SUFFIX,
  type ReportFiles,
  type RunFigures,
  type SweepJob,
  type SweepOptions,
  type SweepSettings,
} from './sweep.ts';
export { SWEEP_COLUMNS, SWEEP_FORMAT, renderSweepHtml, splitParams, sweepFile, sweepHeadings, sweptOnly, type SweepFile, type SweepRow } from './sweep-html.ts';
