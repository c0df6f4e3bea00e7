export { runStrategy, type StrategyRunOptions, type StrategyRunResult } from './harness.ts';
export { testEvent, rebalanceAnnounced, rebalanceCompleted, rebalanceCancelled, compositionDrift, performanceUpdated, type EventPlace } from './events.ts';
