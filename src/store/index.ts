export { storeSnapshotRows, storeEventFacts } from './snapshot-rows.ts';
export { SnapshotStore, type SnapshotInput, type StoredSnapshot, type JobState, type IndexCacheSummary, type OpenStoreOptions } from './snapshot-store.ts';
export { RunLock, isRunning } from './run-lock.ts';
export { HTTP_FACE, type HttpFaceRecord } from './http-face.ts';
export { claimFromDemo, markDemoDatabase, refuseForeignDatabase, removeDatabaseFiles, removeDemoDatabase } from './demo-database.ts';
export { MIGRATIONS, SCHEMA_VERSION } from './migrations.ts';
export { StrategyTables, type PaperPosition, type PaperAccount, type PaperFill, type ParkedEvent, type StrategyAlertRow } from './strategy-tables.ts';
export {
  HistoryTables,
  type HistoryMoment,
  type TimeRange,
  mergeRanges,
  missingRanges,
  findGaps,
  type HeldSpan,
} from './history-tables.ts';
export { OutboxTables, type OutboxRow, type OutboxSummary } from './outbox-tables.ts';
export { failureFields, storeFailure } from './sqlite-errors.ts';
export { RetentionJob, type RetentionOptions, type RetentionPass } from './retention.ts';
export { CacheCopy } from './cache-cut.ts';
