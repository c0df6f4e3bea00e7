import { type RunFigures, SweepSession, type SweepSettings } from '../backtest/index.ts';
import type { Logger } from '../core/index.ts';

/**
 * One backtest of a parameter set over a range: what walk-forward and optimize run many of.
 * They go through a `TrialRunner`, so the same code runs them one after another here, or on
 * the sweep's worker threads.
 */
export interface Trial {
  params: Record<string, unknown>;
  from: number;
  to: number;
}

/** A trial's figures; one whose handlers failed on some events (`failedEvents`) ranks last. */
export type TrialResult = RunFigures;

export type TrialRunner = (trials: readonly Trial[]) => Promise<TrialResult[]>;

/**
 * Runs the trials as the sweep does: on `workers` threads, each opening the cache file
 * read-only, the results in the trials' order. Trials of one range go out together. The
 * threads and the last range's history are kept from one call to the next (a
 * {@link SweepSession}): a search runs a few trials at a time over the same range. `close`
 * ends the worker threads.
 */
export function sweepRunner(o: { db: string; file: string; settings: Omit<SweepSettings, 'from' | 'to'>; workers?: number; logger?: Logger }): TrialRunner & { close(): Promise<void> } {
  const session = new SweepSession({ db: o.db, workers: o.workers, logger: o.logger });
  const run: TrialRunner = async (trials) => {
    const out: TrialResult[] = new Array(trials.length);
    const ranges = new Map<string, number[]>();
    for (const [i, t] of trials.entries()) {
      const key = `${t.from}:${t.to}`;
      ranges.set(key, [...(ranges.get(key) ?? []), i]);
    }
    for (const indices of ranges.values()) {
      const { from, to } = trials[indices[0]!]!;
      // Figures only, made on the thread that ran the trial: its fills never cross threads.
      const results = await session.run(
        { ...o.settings, from, to },
        indices.map((i) => ({ file: o.file, params: trials[i]!.params })),
        { output: 'figures' },
      );
      for (const [k, r] of results.entries()) out[indices[k]!] = r;
    }
    return out;
  };
  return Object.assign(run, { close: () => session.close() });
}

/** Figures a search can rank by; each is better when higher (a drawdown is <= 0). */
export const RANK_METRICS = ['sharpe', 'sortino', 'calmar', 'cagr', 'totalReturn', 'maxDrawdown', 'profitFactor', 'expectancy', 'winRate'] as const;
export type RankMetric = (typeof RANK_METRICS)[number];

/**
 * The figure to rank by. A missing one (null: too few days, no trades), or one of a run whose
 * handlers failed on some events (its figures miss what they would have done), ranks below
 * every number: a search never picks params because they broke the strategy.
 */
export function score(r: Pick<TrialResult, 'metrics' | 'failedEvents'>, metric: RankMetric): number {
  const v = r.metrics[metric];
  return r.failedEvents > 0 || v === null || !Number.isFinite(v) ? Number.NEGATIVE_INFINITY : v;
}

/** Index of the best result; ties go to the first, so the grid's order decides. */
export function bestIndex(results: readonly Pick<TrialResult, 'metrics' | 'failedEvents'>[], metric: RankMetric): number {
  let best = 0;
  for (let i = 1; i < results.length; i++) if (score(results[i]!, metric) > score(results[best]!, metric)) best = i;
  return best;
}
