import type { SnapshotKind } from '../api/index.ts';

export interface PollJob {
  /** Unique name, e.g. `composition:sindex`. */
  name: string;
  kind: SnapshotKind;
  indexId: string | undefined;
  intervalMs: number;
}

export interface BudgetPlan {
  jobs: PollJob[];
  /** Requests per minute the configured intervals ask for. */
  requestedPerMin: number;
  /** Requests per minute after stretching. */
  plannedPerMin: number;
  /** The share of the tier's limit the poller may use. */
  budgetPerMin: number;
  stretched: { name: string; fromMs: number; toMs: number }[];
  /** False when even the longest intervals allowed do not fit. */
  fits: boolean;
}

/** Least urgent first: stretched first when the budget is short; rebalancing last. */
const STRETCH_ORDER: SnapshotKind[][] = [['performance', 'tokens', 'indexes'], ['composition'], ['rebalancing']];

const perMin = (jobs: PollJob[]) => jobs.reduce((sum, j) => sum + 60_000 / j.intervalMs, 0);

/**
 * Requests per minute the jobs ask for against the tier's budget, and, when they ask for
 * more, longer intervals for the least urgent jobs first, so the poller never plans to
 * meet 429s. Each poll is counted as one request (lists of a few items are one page).
 *
 * @param limitPerMin the tier's rate
 * @param headroom share of the limit left to polling; the rest absorbs retries, sign-in and backfill
 * @param maxStretch the most a job's interval may be multiplied by
 */
export function planBudget(jobs: readonly PollJob[], limitPerMin: number, headroom = 0.8, maxStretch = 60): BudgetPlan {
  const budgetPerMin = limitPerMin * headroom;
  const planned = jobs.map((j) => ({ ...j }));
  const requestedPerMin = perMin(planned);
  const stretched: BudgetPlan['stretched'] = [];
  for (const kinds of STRETCH_ORDER) {
    const total = perMin(planned);
    if (total <= budgetPerMin) break;
    const group = planned.filter((j) => kinds.includes(j.kind));
    const groupRate = perMin(group);
    if (groupRate === 0) continue;
    const allowed = Math.max(budgetPerMin - (total - groupRate), groupRate / maxStretch);
    const factor = Math.min(maxStretch, groupRate / allowed);
    for (const job of group) {
      const toMs = Math.ceil((job.intervalMs * factor) / 1000) * 1000;
      stretched.push({ name: job.name, fromMs: job.intervalMs, toMs });
      job.intervalMs = toMs;
    }
  }
  const plannedPerMin = perMin(planned);
  return { jobs: planned, requestedPerMin, plannedPerMin, budgetPerMin, stretched, fits: plannedPerMin <= budgetPerMin + 1e-9 };
}
