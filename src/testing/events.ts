import type { CompositionDrift, EventOf, EventType, PerformanceUpdated, RebalanceAnnounced, RebalanceCancelled, RebalanceCompleted, WeightChange } from '../detect/index.ts';

/** Where and when an event happened; `at` is both its occurredAt and detectedAt. */
export interface EventPlace {
  /** @default 'sindex' */
  indexId?: string;
  /** Epoch ms. @default 2026-01-01T00:00:00Z */
  at?: number;
  /** @default derived from the type, index and a counter */
  id?: string;
}

const DEFAULT_AT = Date.UTC(2026, 0, 1);
let made = 0;

/** Any event, typed by its `type`: `testEvent('index.listed', { index }, { at })`. */
export function testEvent<T extends EventType>(type: T, payload: EventOf<T>['payload'], place: EventPlace = {}): EventOf<T> {
  const indexId = place.indexId ?? 'sindex';
  const at = place.at ?? DEFAULT_AT;
  return { id: place.id ?? `${type}:${indexId}:test-${++made}`, type, seq: 0, indexId, occurredAt: at, detectedAt: at, payload } as EventOf<T>;
}

interface RebalanceFields extends EventPlace {
  changes: WeightChange[];
  /** @default 'rb_test_<n>' */
  rebalanceId?: string;
  /** @default at */
  announcedAt?: number;
  /** @default at + 1 day */
  effectiveAt?: number;
}

const rebalanceId = (f: RebalanceFields) => f.rebalanceId ?? `rb_test_${made + 1}`;

export function rebalanceAnnounced(f: RebalanceFields & { reason?: string }): RebalanceAnnounced {
  const at = f.at ?? DEFAULT_AT;
  return testEvent('rebalance.announced', { rebalanceId: rebalanceId(f), announcedAt: f.announcedAt ?? at, effectiveAt: f.effectiveAt ?? at + 86_400_000, reason: f.reason, changes: f.changes }, f);
}

/** `before`, `after`, `added` and `removed` follow from the changes. */
export function rebalanceCompleted(f: RebalanceFields): RebalanceCompleted {
  const at = f.at ?? DEFAULT_AT;
  const before = Object.fromEntries(f.changes.filter((c) => c.oldWeight > 0).map((c) => [c.address, c.oldWeight]));
  const after = Object.fromEntries(f.changes.filter((c) => c.newWeight > 0).map((c) => [c.address, c.newWeight]));
  return testEvent(
    'rebalance.completed',
    {
      rebalanceId: rebalanceId(f),
      effectiveAt: f.effectiveAt ?? at,
      before,
      after,
      changes: f.changes,
      added: f.changes.filter((c) => c.action === 'add').map((c) => c.address),
      removed: f.changes.filter((c) => c.action === 'remove').map((c) => c.address),
      source: 'rebalancing',
    },
    f,
  );
}

export function rebalanceCancelled(f: RebalanceFields): RebalanceCancelled {
  const at = f.at ?? DEFAULT_AT;
  return testEvent('rebalance.cancelled', { rebalanceId: rebalanceId(f), announcedAt: f.announcedAt ?? at, effectiveAt: f.effectiveAt ?? at + 86_400_000, changes: f.changes }, f);
}

export function compositionDrift(f: EventPlace & { address: string; symbol: string; weight: number; target: number; threshold?: number }): CompositionDrift {
  return testEvent('composition.drift', { address: f.address, symbol: f.symbol, weight: f.weight, target: f.target, deviation: f.weight - f.target, threshold: f.threshold ?? 0.02 }, f);
}

export function performanceUpdated(f: EventPlace & { nav: number; returns?: Record<string, number | null> }): PerformanceUpdated {
  return testEvent('performance.updated', { nav: f.nav, returns: f.returns ?? {}, asOf: f.at ?? DEFAULT_AT }, f);
}
