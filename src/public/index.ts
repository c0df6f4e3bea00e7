/**
 * `indexbot`: what a strategy file imports. It loads no database, server or HTTP code, so
 * a strategy (and its unit tests) import it cheaply.
 */
export { defineStrategy, isStrategy, type Strategy, type StrategyDefinition, type StrategyContext, type StrategyState, type MarketData, type Handler, type Handlers } from '../strategy/define.ts';
export { type Broker, type Instrument, type OrderRequest, type OrderResult, type Fill, type Position, type RejectCode, type Rejection, instrumentKey, parseInstrument } from '../strategy/broker.ts';
export {
  EVENT_TYPES,
  type IndexbotEvent,
  type EventType,
  type EventOf,
  type WeightChange,
  type RebalanceAnnounced,
  type RebalanceAnnouncedPayload,
  type RebalanceCompleted,
  type RebalanceCompletedPayload,
  type RebalanceCancelled,
  type RebalanceCancelledPayload,
  type CompositionDrift,
  type CompositionDriftPayload,
  type PerformanceUpdated,
  type PerformanceUpdatedPayload,
  type IndexListed,
  type IndexDelisted,
  type IndexStatusChanged,
  type IndexPayload,
} from '../detect/events.ts';
export { describeEvent, describeChanges } from '../alerts/format.ts';
export type { Logger } from '../core/logger.ts';
