import { SnapshotStore } from '../store/index.ts';

/** A cache for `runBacktest`, opened read-only: a backtest never writes to it. Close it when done. */
export function openCache(path: string): SnapshotStore {
  return SnapshotStore.open(path, { readonly: true });
}
