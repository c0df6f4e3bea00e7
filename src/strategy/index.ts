export { defineStrategy, isStrategy, type Strategy, type StrategyDefinition, type StrategyContext, type StrategyState, type MarketData, type Handler, type Handlers } from './define.ts';
export {
  type Broker,
  type Instrument,
  type OrderRequest,
  type OrderResult,
  type Fill,
  type Position,
  type RejectCode,
  type Rejection,
  instrumentKey,
  instrumentLabel,
  parseInstrument,
} from './broker.ts';
export { PaperBroker, type PaperBrokerOptions, type PaperBook } from './paper-broker.ts';
export {
  checkConfiguredNames,
  strategyFiles,
  strategyFileNamed,
  STRATEGY_SOURCE,
  loadStrategy,
  strategyWithParams,
  loadStrategies,
  loadStrategyModule,
  sourceLocation,
  withParams,
  ParamsError,
  type LoadedStrategy,
  type LoadOptions,
} from './loader.ts';
export { strategySourceHash } from './source-hash.ts';
export { StrategyRuntime, type RuntimeOptions, type EventLog, type MarketQueries, markPaused, pausedStrategies } from './runtime.ts';
export { consumerOf } from './runner.ts';
export { watchStrategies, type WatchOptions } from './watch.ts';
