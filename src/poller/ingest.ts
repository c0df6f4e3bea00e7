import { createHash } from 'node:crypto';
import type { Snapshot, SnapshotKind, SnapshotValues } from '../api/index.ts';
import type { Composition, IndexSummary, Performance, Rebalance } from '../contract/index.ts';
import {
  type CompositionState,
  type IndexListState,
  type IndexbotEvent,
  type NewEvent,
  type RebalanceStates,
  detectComposition,
  detectIndexList,
  detectPerformance,
  detectRebalancing,
} from '../detect/index.ts';
import { type SnapshotStore, storeEventFacts, storeSnapshotRows } from '../store/index.ts';

export interface IngestResult {
  /** Events stored by this poll (new ids only), with their seq. */
  events: IndexbotEvent[];
  outcome: 'stored' | 'unchanged' | 'rejected';
}

/**
 * Stores one poll's snapshot, its normalized rows and the events it produces in ONE
 * transaction: a crash leaves all of it or none, and a restart re-detects exactly what was
 * lost. An identical snapshot is not stored again; one that fails validation is stored as
 * rejected and produces nothing.
 */
export function ingest<K extends SnapshotKind>(store: SnapshotStore, snapshot: Snapshot<K>, indexId: string | undefined, fetchedAt: number, driftThreshold: number): IngestResult {
  const endpoint = snapshot.kind;
  // The server's key order is stable, so the text itself is a fine identity; a reordering
  // would only store one snapshot more.
  const raw = JSON.stringify(snapshot.raw);
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 32);
  return store.transaction((): IngestResult => {
    if (store.lastSnapshotHash(endpoint, indexId ?? null) === hash) return { events: [], outcome: 'unchanged' };
    const asOfText = (snapshot.value as { as_of?: string } | undefined)?.as_of;
    const asOf = asOfText === undefined ? null : Date.parse(asOfText);
    if (snapshot.error || snapshot.value === undefined) {
      store.insertSnapshot({ endpoint, indexId: indexId ?? null, fetchedAt, asOf, hash, raw, status: 'rejected', error: snapshot.error?.message ?? 'no value' });
      return { events: [], outcome: 'rejected' };
    }
    const id = store.insertSnapshot({ endpoint, indexId: indexId ?? null, fetchedAt, asOf, hash, raw, status: 'accepted' });
    const events = normalize(store, snapshot.kind, snapshot.value, id, indexId, fetchedAt, driftThreshold);
    return { events: store.appendEvents(events), outcome: 'stored' };
  });
}

/** Stores the snapshot's rows, then hands the detector its state and the new data; returns the events. */
function normalize(store: SnapshotStore, kind: SnapshotKind, value: unknown, snapshotId: number, indexId: string | undefined, at: number, driftThreshold: number): NewEvent[] {
  storeSnapshotRows(store, kind, value as SnapshotValues[SnapshotKind], snapshotId, at);
  const key = `${kind}:${indexId ?? '*'}`;
  switch (kind) {
    case 'composition': {
      const c = value as Composition;
      const { state, events } = detectComposition(c.index_id, store.detectorState<CompositionState>(key), c, driftThreshold, at, (id) => store.rebalanceEffectiveAt(id));
      store.setDetectorState(key, state);
      return events;
    }
    case 'performance': {
      const p = value as Performance;
      const events = detectPerformance(p.index_id, store.detectorState<Performance>(key), p, at);
      store.setDetectorState(key, p);
      return events;
    }
    case 'rebalancing': {
      const { state, events } = detectRebalancing(indexId!, store.detectorState<RebalanceStates>(key), value as Rebalance[], at);
      store.setDetectorState(key, state);
      return events;
    }
    case 'indexes': {
      const { state, events } = detectIndexList(store.detectorState<IndexListState>(key), value as IndexSummary[], at);
      storeEventFacts(store, events);
      store.setDetectorState(key, state);
      return events;
    }
    case 'tokens':
      return [];
  }
}
