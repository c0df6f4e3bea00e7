export { Poller, type PollerOptions } from './poller.ts';
export { planBudget, type BudgetPlan, type PollJob } from './budget.ts';
export { ingest, type IngestResult } from './ingest.ts';
