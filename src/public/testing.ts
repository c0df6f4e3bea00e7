/** `indexbot/testing`: unit tests of a strategy without a server or a database file. */
export {
  runStrategy,
  testEvent,
  rebalanceAnnounced,
  rebalanceCompleted,
  rebalanceCancelled,
  compositionDrift,
  performanceUpdated,
  type StrategyRunOptions,
  type StrategyRunResult,
  type EventPlace,
} from '../testing/index.ts';
export { ManualClock, type Clock } from '../core/clock.ts';
