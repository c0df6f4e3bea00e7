import type { IndexSummary } from '../contract/index.ts';

/** A token's target weight before and after a rebalance; 0 means not a constituent. */
export interface WeightChange {
  address: string;
  symbol: string;
  action: 'add' | 'remove' | 'increase' | 'decrease';
  oldWeight: number;
  newWeight: number;
}

interface EventBase<T extends string, P> {
  /** Deterministic from the fact (e.g. `rebalance.completed:sindex:rb_123`): the same fact seen twice is one event. */
  id: string;
  type: T;
  /** Order in the event log; 0 until the event is stored. */
  seq: number;
  indexId: string;
  /** The server's time of the fact, epoch ms; for a fact the API gives no time for (`UNTIMED_EVENT_TYPES`), when we saw it. */
  occurredAt: number;
  /** Our clock when we saw it, epoch ms. */
  detectedAt: number;
  payload: P;
}

export interface RebalanceAnnouncedPayload {
  rebalanceId: string;
  announcedAt: number;
  effectiveAt: number;
  reason: string | undefined;
  changes: WeightChange[];
}

export interface RebalanceCompletedPayload {
  rebalanceId: string;
  effectiveAt: number;
  /** Target weights by token address, before and after. */
  before: Record<string, number>;
  after: Record<string, number>;
  changes: WeightChange[];
  added: string[];
  removed: string[];
  /** Which observation showed it first. */
  source: 'rebalancing' | 'composition';
}

export interface RebalanceCancelledPayload {
  rebalanceId: string;
  announcedAt: number;
  effectiveAt: number;
  changes: WeightChange[];
}

export interface CompositionDriftPayload {
  address: string;
  symbol: string;
  weight: number;
  target: number;
  /** weight - target. */
  deviation: number;
  threshold: number;
}

export interface PerformanceUpdatedPayload {
  nav: number;
  returns: Record<string, number | null | undefined>;
  asOf: number;
}

export interface IndexPayload {
  index: IndexSummary;
  previousStatus?: string | undefined;
}

export type RebalanceAnnounced = EventBase<'rebalance.announced', RebalanceAnnouncedPayload>;
export type RebalanceCompleted = EventBase<'rebalance.completed', RebalanceCompletedPayload>;
export type RebalanceCancelled = EventBase<'rebalance.cancelled', RebalanceCancelledPayload>;
export type CompositionDrift = EventBase<'composition.drift', CompositionDriftPayload>;
export type PerformanceUpdated = EventBase<'performance.updated', PerformanceUpdatedPayload>;
export type IndexListed = EventBase<'index.listed', IndexPayload>;
export type IndexDelisted = EventBase<'index.delisted', IndexPayload>;
export type IndexStatusChanged = EventBase<'index.status_changed', IndexPayload>;

/** Everything the detector reports, discriminated on `type`. */
export type IndexbotEvent = RebalanceAnnounced | RebalanceCompleted | RebalanceCancelled | CompositionDrift | PerformanceUpdated | IndexListed | IndexDelisted | IndexStatusChanged;

export type EventType = IndexbotEvent['type'];
/** The event of one type: `EventOf<'rebalance.announced'>`. */
export type EventOf<T extends EventType> = Extract<IndexbotEvent, { type: T }>;

export const EVENT_TYPES: readonly EventType[] = [
  'rebalance.announced',
  'rebalance.completed',
  'rebalance.cancelled',
  'composition.drift',
  'performance.updated',
  'index.listed',
  'index.delisted',
  'index.status_changed',
];

/** Facts the API gives no time for (a cancellation, a change of the index list): their `occurredAt` is when they were seen, so there is no detection delay to measure. */
export const UNTIMED_EVENT_TYPES: ReadonlySet<EventType> = new Set<EventType>(['rebalance.cancelled', 'index.listed', 'index.delisted', 'index.status_changed']);
