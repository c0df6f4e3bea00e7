import { ANNUALISED_METRICS, DAY_MS, type EquityPoint, type ReturnMetrics, returnMetrics, shortWindowWarning } from '../backtest/index.ts';
import { UsageError } from '../core/index.ts';
import { type RankMetric, type TrialRunner, bestIndex, score } from './trials.ts';

/**
 * Walk-forward analysis: choose parameters on a training window, run them on the window
 * that follows, move on, and judge the strategy by the test windows stitched together:
 * performance it could have had without knowing the future of its own parameter choice.
 */

export interface WalkForwardWindow {
  trainFrom: number;
  trainTo: number;
  testFrom: number;
  testTo: number;
}

export interface WindowSpec {
  from: number;
  to: number;
  trainMs: number;
  testMs: number;
  /** @default testMs */
  stepMs?: number;
  /** Every training window starts at `from` and grows by `step`. @default false */
  anchored?: boolean;
}

/**
 * The windows that fit whole in [from, to]: training [start, start + train] (or [from, ...]
 * anchored), then testing up to `test` further. A last stretch shorter than `test` is left
 * out, not run short.
 */
export function walkForwardWindows(s: WindowSpec): WalkForwardWindow[] {
  const step = s.stepMs ?? s.testMs;
  for (const [name, v] of [
    ['train', s.trainMs],
    ['test', s.testMs],
    ['step', step],
  ] as const) {
    if (!(Number.isFinite(v) && v > 0)) throw new RangeError(`Expected \`${name}\` to be a positive duration, got ${v}`);
  }
  if (step < s.testMs) throw new UsageError(`--step (${step / DAY_MS} d) must be at least --test (${s.testMs / DAY_MS} d), so that test windows do not overlap`);
  const out: WalkForwardWindow[] = [];
  for (let k = 0; ; k++) {
    const trainFrom = s.anchored ? s.from : s.from + k * step;
    const trainTo = s.from + s.trainMs + k * step;
    const testTo = trainTo + s.testMs;
    if (testTo > s.to) break;
    out.push({ trainFrom, trainTo, testFrom: trainTo, testTo });
  }
  if (out.length === 0) {
    const days = (ms: number) => `${+(ms / DAY_MS).toFixed(2)} d`;
    throw new UsageError(`the range holds ${days(s.to - s.from)} of history, less than --train ${days(s.trainMs)} + --test ${days(s.testMs)}; backfill more or shorten the windows`);
  }
  return out;
}

/**
 * Chains the test windows' equity into one curve: each window's returns, applied from where
 * the previous one ended (every window starts from the same cash, so only returns carry).
 */
export function stitch(curves: readonly EquityPoint[][]): EquityPoint[] {
  const out: EquityPoint[] = [];
  for (const curve of curves) {
    if (curve.length === 0) continue;
    const base = curve[0]!.value;
    const scale = out.length === 0 || base <= 0 ? 1 : out[out.length - 1]!.value / base;
    const fresh = out.length > 0 && out[out.length - 1]!.t >= curve[0]!.t ? curve.slice(1) : curve;
    for (const p of fresh) out.push({ t: p.t, value: p.value * scale, exposure: p.exposure });
  }
  return out;
}

export interface WalkForwardResult {
  metric: RankMetric;
  windows: (WalkForwardWindow & {
    params: unknown;
    /** The chosen params' figure on the training window, and on the test window. */
    inSample: number | null;
    outOfSample: number | null;
    testReturn: number;
    /** How many parameter sets were tried. */
    candidates: number;
    /** Events whose handler failed in the window's training runs, every candidate's (a failing one is never chosen over one that did not fail). */
    failedInTraining: number;
    /** Events whose handler failed in the chosen params' test run. */
    failedInTest: number;
  })[];
  outOfSample: { metrics: ReturnMetrics; equity: EquityPoint[] };
  /** Mean of the chosen params' training figures. */
  inSampleMean: number | null;
}

export async function walkForward(o: {
  windows: WalkForwardWindow[];
  grid: Record<string, unknown>[];
  metric: RankMetric;
  run: TrialRunner;
  onWindow?: (done: number, total: number) => void;
}): Promise<WalkForwardResult> {
  if (o.grid.length === 0) throw new RangeError('Expected at least one parameter set in the grid');
  const windows: WalkForwardResult['windows'] = [];
  const testCurves: EquityPoint[][] = [];
  const finite = (x: number) => (Number.isFinite(x) ? x : null);
  for (const [i, w] of o.windows.entries()) {
    const trained = await o.run(o.grid.map((params) => ({ params, from: w.trainFrom, to: w.trainTo })));
    const best = bestIndex(trained, o.metric);
    const [tested] = await o.run([{ params: o.grid[best]!, from: w.testFrom, to: w.testTo }]);
    testCurves.push(tested!.equity);
    windows.push({
      ...w,
      params: trained[best]!.params,
      inSample: finite(score(trained[best]!, o.metric)),
      outOfSample: finite(score(tested!, o.metric)),
      testReturn: tested!.metrics.totalReturn,
      candidates: trained.length,
      failedInTraining: trained.reduce((n, t) => n + t.failedEvents, 0),
      failedInTest: tested!.failedEvents,
    });
    o.onWindow?.(i + 1, o.windows.length);
  }
  const equity = stitch(testCurves);
  const inSample = windows.map((w) => w.inSample).filter((x): x is number => x !== null);
  return {
    metric: o.metric,
    windows,
    outOfSample: { metrics: returnMetrics(equity), equity },
    inSampleMean: inSample.length === 0 ? null : inSample.reduce((a, b) => a + b, 0) / inSample.length,
  };
}

/**
 * What qualifies a walk-forward's annualised figures, as a single run's table marks them
 * (trial 40: 14-day windows' CAGR unmarked): ` (!)` beside the ranking metric's in- and
 * out-of-sample headings when it is CAGR or Sharpe of windows under 90 days, beside the
 * stitched CAGR and Sharpe when the test windows stitched are, and a warning for each.
 */
export function shortWindowMarks(r: Pick<WalkForwardResult, 'metric' | 'windows' | 'outOfSample'>): { inSample: string; outOfSample: string; stitched: string; warnings: string[] } {
  const shortest = (span: (w: WalkForwardResult['windows'][number]) => number) => Math.min(...r.windows.map((w) => span(w) / DAY_MS));
  const ranked = ANNUALISED_METRICS.includes(r.metric);
  const train = ranked
    ? shortWindowWarning(
        shortest((w) => w.trainTo - w.trainFrom),
        'the shortest train window is',
      )
    : null;
  const test = ranked
    ? shortWindowWarning(
        shortest((w) => w.testTo - w.testFrom),
        'the shortest test window is',
      )
    : null;
  const stitched = shortWindowWarning(r.outOfSample.metrics.days, 'the test windows stitched are');
  const mark = (warning: string | null) => (warning === null ? '' : ' (!)');
  return { inSample: mark(train), outOfSample: mark(test), stitched: mark(stitched), warnings: [train, test, stitched].filter((w) => w !== null) };
}
