export { Poller, type PollerOptions } from './poller.ts';
export { planBudget, type BudgetPlan, type PollJob } from './budget.ts';
export { ingest, type IngestResult } from './ingest.ts';
export { backfill, describeRange, type BackfillOptions, type BackfillProgress, type BackfillReport, type IndexBackfill } from './backfill.ts';
