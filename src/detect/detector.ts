import { createHash } from 'node:crypto';
import type { Composition, IndexSummary, Performance, Rebalance, RebalanceChange } from '../contract/index.ts';
import type { CompositionDrift, IndexbotEvent, RebalanceAnnounced, RebalanceCancelled, RebalanceCompleted, WeightChange } from './events.ts';

/**
 * Pure functions from (what we knew, what the server now says) to events. They know no
 * client and no store: the caller hands them the previous state and writes what they return
 * in the same transaction as the snapshot that produced it.
 */

/** An event before the log gave it a `seq`; distributes over the union so `type` still narrows. */
type Unstored<E extends IndexbotEvent> = E extends IndexbotEvent ? Omit<E, 'seq'> : never;
export type NewEvent = Unstored<IndexbotEvent>;

const ms = (iso: string) => Date.parse(iso);
/** Changes below this are float noise, not a reweighting. */
const WEIGHT_EPSILON = 1e-9;

/** What the store remembers of an index's last composition. */
export interface CompositionState {
  rebalanceId: string | null | undefined;
  /** Target weight by address. */
  targets: Record<string, number>;
  symbols: Record<string, string>;
  /** Addresses whose weight was past the drift threshold. */
  drifting: string[];
}

export function compositionState(c: Composition, driftThreshold: number, prev?: CompositionState): CompositionState {
  const drifting: string[] = [];
  // Targets change only at a rebalance: while they match, the previous maps are reused
  // rather than rebuilt for every poll (or every replayed point of a backtest).
  let same = prev !== undefined && prev.rebalanceId === c.rebalance_id && Object.keys(prev.targets).length === c.constituents.length;
  for (const k of c.constituents) {
    if (Math.abs(k.weight - k.target_weight) > driftThreshold) drifting.push(k.address);
    if (same && (prev!.targets[k.address] !== k.target_weight || prev!.symbols[k.address] !== k.symbol)) same = false;
  }
  if (same) return { rebalanceId: prev!.rebalanceId, targets: prev!.targets, symbols: prev!.symbols, drifting };
  return {
    rebalanceId: c.rebalance_id,
    targets: Object.fromEntries(c.constituents.map((k) => [k.address, k.target_weight])),
    symbols: Object.fromEntries(c.constituents.map((k) => [k.address, k.symbol])),
    drifting,
  };
}

/** The per-token changes between two sets of target weights, in the order a person reads them. */
export function weightChanges(before: Record<string, number>, after: Record<string, number>, symbols: Record<string, string>): WeightChange[] {
  const out: WeightChange[] = [];
  for (const address of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const oldWeight = before[address] ?? 0;
    const newWeight = after[address] ?? 0;
    if (Math.abs(newWeight - oldWeight) <= WEIGHT_EPSILON) continue;
    const action = oldWeight === 0 ? 'add' : newWeight === 0 ? 'remove' : newWeight > oldWeight ? 'increase' : 'decrease';
    out.push({ address, symbol: symbols[address] ?? address, action, oldWeight, newWeight });
  }
  return out.sort((a, b) => b.newWeight - a.newWeight || a.symbol.localeCompare(b.symbol));
}

function fromFeed(changes: readonly RebalanceChange[]): WeightChange[] {
  return changes.map((c) => ({
    address: c.address,
    symbol: c.symbol,
    action: (['add', 'remove', 'increase', 'decrease'].includes(c.action) ? c.action : c.new_weight > c.old_weight ? 'increase' : 'decrease') as WeightChange['action'],
    oldWeight: c.old_weight,
    newWeight: c.new_weight,
  }));
}

function completed(
  indexId: string,
  rebalanceId: string,
  effectiveAt: number,
  changes: WeightChange[],
  detectedAt: number,
  source: 'rebalancing' | 'composition',
  before?: Record<string, number>,
  after?: Record<string, number>,
): Unstored<RebalanceCompleted> {
  const b = before ?? Object.fromEntries(changes.filter((c) => c.oldWeight > 0).map((c) => [c.address, c.oldWeight]));
  const a = after ?? Object.fromEntries(changes.filter((c) => c.newWeight > 0).map((c) => [c.address, c.newWeight]));
  return {
    id: `rebalance.completed:${indexId}:${rebalanceId}`,
    type: 'rebalance.completed',
    indexId,
    occurredAt: effectiveAt,
    detectedAt,
    payload: {
      rebalanceId,
      effectiveAt,
      before: b,
      after: a,
      changes,
      added: changes.filter((c) => c.action === 'add').map((c) => c.address),
      removed: changes.filter((c) => c.action === 'remove').map((c) => c.address),
      source,
    },
  };
}

/**
 * A new composition against the last one. The first composition of an index is a baseline:
 * it is remembered and produces nothing. A new `rebalance_id` or new target weights mean a
 * rebalance completed; a weight newly past the threshold is drift.
 */
export function detectComposition(
  indexId: string,
  prev: CompositionState | undefined,
  next: Composition,
  driftThreshold: number,
  detectedAt: number,
  /** The `effective_at` of a rebalance already known from the feed; else the composition's `as_of` stands in. */
  effectiveAtOf: (rebalanceId: string) => number | undefined = () => undefined,
): { state: CompositionState; events: NewEvent[] } {
  const state = compositionState(next, driftThreshold, prev);
  if (!prev) return { state, events: [] };
  const asOf = ms(next.as_of);
  const events: NewEvent[] = [];
  const changes = state.targets === prev.targets ? [] : weightChanges(prev.targets, state.targets, { ...prev.symbols, ...state.symbols });
  const idChanged = state.rebalanceId != null && state.rebalanceId !== prev.rebalanceId;
  if (idChanged || changes.length > 0) {
    // Without a rebalance id (a server that does not send one) the new targets name the fact.
    const rebalanceId = state.rebalanceId ?? `targets-${stableHash(state.targets)}`;
    events.push(completed(indexId, rebalanceId, effectiveAtOf(rebalanceId) ?? asOf, changes, detectedAt, 'composition', prev.targets, state.targets));
  }
  if (state.drifting.length === 0) return { state, events };
  const wasDrifting = new Set(prev.drifting);
  for (const c of next.constituents) {
    if (!state.drifting.includes(c.address) || wasDrifting.has(c.address)) continue;
    const drift: Unstored<CompositionDrift> = {
      id: `composition.drift:${indexId}:${c.address}:${next.as_of}`,
      type: 'composition.drift',
      indexId,
      occurredAt: asOf,
      detectedAt,
      payload: { address: c.address, symbol: c.symbol, weight: c.weight, target: c.target_weight, deviation: c.weight - c.target_weight, threshold: driftThreshold },
    };
    events.push(drift);
  }
  return { state, events };
}

/** Status of each rebalance id we have seen for an index. */
export type RebalanceStates = Record<string, string>;

/**
 * The rebalancing feed against the statuses we knew. On the first poll (no known
 * statuses) history is a baseline: only rebalances still pending are reported, as
 * announced, because a strategy must hear of a rebalance it can still act on.
 */
export function detectRebalancing(indexId: string, known: RebalanceStates | undefined, records: readonly Rebalance[], detectedAt: number): { state: RebalanceStates; events: NewEvent[] } {
  const state: RebalanceStates = { ...known };
  const events: NewEvent[] = [];
  const baseline = known === undefined;
  for (const r of [...records].sort((a, b) => ms(a.announced_at) - ms(b.announced_at))) {
    const before = known?.[r.id];
    state[r.id] = r.status;
    if (before === r.status) continue;
    const changes = fromFeed(r.changes);
    if (r.status === 'announced' && before === undefined) {
      const e: Unstored<RebalanceAnnounced> = {
        id: `rebalance.announced:${indexId}:${r.id}`,
        type: 'rebalance.announced',
        indexId,
        occurredAt: ms(r.announced_at),
        detectedAt,
        payload: { rebalanceId: r.id, announcedAt: ms(r.announced_at), effectiveAt: ms(r.effective_at), reason: r.reason, changes },
      };
      events.push(e);
    } else if (baseline) {
    } else if (r.status === 'completed') {
      const at = ms(r.completed_at ?? r.effective_at);
      events.push(completed(indexId, r.id, at, changes, detectedAt, 'rebalancing'));
    } else if (r.status === 'cancelled') {
      const e: Unstored<RebalanceCancelled> = {
        id: `rebalance.cancelled:${indexId}:${r.id}`,
        type: 'rebalance.cancelled',
        indexId,
        occurredAt: detectedAt,
        detectedAt,
        payload: { rebalanceId: r.id, announcedAt: ms(r.announced_at), effectiveAt: ms(r.effective_at), changes },
      };
      events.push(e);
    }
  }
  return { state, events };
}

/** A performance snapshot that differs from the last one (nav or any return). */
export function detectPerformance(indexId: string, prev: Performance | undefined, next: Performance, detectedAt: number): NewEvent[] {
  if (!prev) return [];
  if (prev.nav === next.nav && JSON.stringify(prev.returns) === JSON.stringify(next.returns)) return [];
  return [
    {
      id: `performance.updated:${indexId}:${next.as_of}`,
      type: 'performance.updated',
      indexId,
      occurredAt: ms(next.as_of),
      detectedAt,
      payload: { nav: next.nav, returns: { ...next.returns } as Record<string, number | null | undefined>, asOf: ms(next.as_of) },
    },
  ];
}

/** Status of each listed index we know. */
export type IndexListState = Record<string, string>;

/** The index list against the last one: listings, delistings and status changes. The first list is a baseline. */
export function detectIndexList(prev: IndexListState | undefined, list: readonly IndexSummary[], detectedAt: number): { state: IndexListState; events: NewEvent[] } {
  const state: IndexListState = Object.fromEntries(list.map((i) => [i.id, String(i.status ?? 'active')]));
  if (!prev) return { state, events: [] };
  const events: NewEvent[] = [];
  const base = (type: 'index.listed' | 'index.delisted' | 'index.status_changed', index: IndexSummary, previousStatus?: string) => ({
    id: `${type}:${index.id}:${detectedAt}`,
    type,
    indexId: index.id,
    occurredAt: detectedAt,
    detectedAt,
    payload: { index, previousStatus },
  });
  for (const index of list) {
    const before = prev[index.id];
    if (before === undefined) events.push(base('index.listed', index));
    else if (before !== state[index.id]) events.push(base('index.status_changed', index, before));
  }
  for (const id of Object.keys(prev)) {
    if (!(id in state)) events.push(base('index.delisted', { id } as IndexSummary, prev[id]));
  }
  return { state, events };
}

/** A short, stable hash of a JSON-able value (object keys sorted, so key order does not matter). */
export function stableHash(value: unknown): string {
  const text = JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}
