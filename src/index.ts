/**
 * The public API of indexbot: everything a strategy author or an integrator imports,
 * as `import { ... } from 'indexbot'`.
 */
export * from './core/index.ts';
export * from './contract/index.ts';
export * from './api/index.ts';
export * from './auth/index.ts';
export * from './ratelimit/index.ts';
export { startSandbox, demoKey, type Sandbox, type SandboxOptions, type SandboxCounters, type ApiKeySpec, type KeyTier } from './sandbox/index.ts';
export * from './detect/events.ts';
export {
  defineStrategy,
  type Strategy,
  type StrategyDefinition,
  type StrategyContext,
  type StrategyState,
  type MarketData,
  type Handler,
  type Broker,
  type Instrument,
  type OrderRequest,
  type OrderResult,
  type Fill,
  type Position,
  PaperBroker,
  type PaperBrokerOptions,
  parseInstrument,
  instrumentKey,
} from './strategy/index.ts';
export { describeChanges, describeEvent } from './alerts/index.ts';
export {
  runBacktest,
  buildReport,
  renderHtml,
  renderTable,
  returnMetrics,
  strategyMetrics,
  type BacktestOptions,
  type BacktestResult,
  type BacktestReport,
  type ReturnMetrics,
  type StrategyMetrics,
  type EquityPoint,
  type TradeFill,
} from './backtest/index.ts';
