export {
  IndexClient,
  type IndexClientOptions,
  type CallOptions,
  type ListOptions,
  type HistoryQuery,
  type RebalancingQuery,
  type Snapshot,
  type SnapshotKind,
  type SnapshotValues,
  SNAPSHOT_PATH,
  SNAPSHOT_PRIORITY,
} from './client.ts';
export { PageIterator, type Page, type PageRequest } from './pagination.ts';
export { type RequestObserver, type SharedBudgetSource, endpointTemplate } from './transport.ts';
