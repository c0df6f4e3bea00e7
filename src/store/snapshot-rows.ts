import type { SnapshotKind, SnapshotValues } from '../api/index.ts';
import type { NewEvent } from '../detect/index.ts';
import type { SnapshotStore } from './snapshot-store.ts';

/**
 * The normalized rows of one stored snapshot: what `ctx.data` and the paper broker read. The
 * poller writes them beside the snapshot it fetched, and a strategies runner beside the
 * snapshot its collector published, so both stores answer the same queries alike.
 */
export function storeSnapshotRows<K extends SnapshotKind>(store: SnapshotStore, kind: K, value: SnapshotValues[K], snapshotId: number, at: number): void {
  switch (kind) {
    case 'composition':
      store.insertComposition(snapshotId, value as SnapshotValues['composition']);
      return;
    case 'performance':
      store.insertPerformance(snapshotId, value as SnapshotValues['performance']);
      return;
    case 'rebalancing':
      for (const r of value as SnapshotValues['rebalancing']) store.upsertRebalance(r, at);
      return;
    case 'indexes':
      for (const i of value as SnapshotValues['indexes']) store.upsertIndex(i, at);
      return;
    case 'tokens':
      for (const t of value as SnapshotValues['tokens']) store.upsertToken(t, at);
      return;
  }
}

/** What an event itself says about the cache: a delisted index is marked so. */
export function storeEventFacts(store: SnapshotStore, events: readonly NewEvent[]): void {
  for (const e of events) if (e.type === 'index.delisted') store.markDelisted(e.indexId, e.detectedAt);
}
