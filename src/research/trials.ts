import { type BacktestOptions, type EquityPoint, type StrategyMetrics, runBacktest } from '../backtest/index.ts';
import { type Strategy, withParams } from '../strategy/index.ts';

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

export interface TrialResult {
  runId: string;
  /** The params after the strategy's schema (defaults filled in). */
  params: unknown;
  metrics: StrategyMetrics;
  equity: EquityPoint[];
}

export type TrialRunner = (trials: readonly Trial[]) => Promise<TrialResult[]>;

/** Runs the trials one after another in this process. */
export function serialRunner(strategy: { strategy: Strategy; file: string }, common: Omit<BacktestOptions, 'strategy' | 'from' | 'to'>): TrialRunner {
  return async (trials) => {
    const out: TrialResult[] = [];
    for (const t of trials) {
      const r = await runBacktest({ ...common, strategy: withParams(strategy.strategy, strategy.file, t.params), from: t.from, to: t.to });
      out.push({ runId: r.runId, params: r.strategy.params, metrics: r.metrics, equity: r.equity });
    }
    return out;
  };
}

/** Figures a search can rank by; each is better when higher (a drawdown is <= 0). */
export const RANK_METRICS = ['sharpe', 'sortino', 'calmar', 'cagr', 'totalReturn', 'maxDrawdown', 'profitFactor', 'expectancy', 'winRate'] as const;
export type RankMetric = (typeof RANK_METRICS)[number];

/** The figure to rank by; a missing one (null: too few days, no trades) ranks below every number. */
export function score(m: StrategyMetrics, metric: RankMetric): number {
  const v = m[metric];
  return v === null || !Number.isFinite(v) ? Number.NEGATIVE_INFINITY : v;
}

/** Index of the best result; ties go to the first, so the grid's order decides. */
export function bestIndex(results: readonly { metrics: StrategyMetrics }[], metric: RankMetric): number {
  let best = 0;
  for (let i = 1; i < results.length; i++) if (score(results[i]!.metrics, metric) > score(results[best]!.metrics, metric)) best = i;
  return best;
}
