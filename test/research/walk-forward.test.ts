import { describe, expect, it } from 'vitest';
import { DAY_MS, type EquityPoint, type StrategyMetrics, runBacktest, splitParams } from '../../src/backtest/index.ts';
import { UsageError } from '../../src/core/index.ts';
import { renderWalkForwardPage, shortWindowMarks, stitch, sweepRunner, walkForward, walkForwardWindows } from '../../src/research/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { loadStrategyModule, withParams } from '../../src/strategy/index.ts';
import { H, T0, buildCache } from '../helpers/backtest-cache.ts';

const D = DAY_MS;
const days = (ws: { trainFrom: number; trainTo: number; testFrom: number; testTo: number }[]) => ws.map((w) => [w.trainFrom / D, w.trainTo / D, w.testFrom / D, w.testTo / D]);

describe('walk-forward windows', () => {
  it('rolling: each window moves by the step; a test window ending exactly at the end is kept, a shorter one is not', () => {
    const w = walkForwardWindows({ from: 0, to: 100 * D, trainMs: 30 * D, testMs: 10 * D });
    expect(w).toHaveLength(7);
    expect(days(w).slice(0, 2)).toEqual([
      [0, 30, 30, 40],
      [10, 40, 40, 50],
    ]);
    expect(days(w).at(-1)).toEqual([60, 90, 90, 100]);
    expect(walkForwardWindows({ from: 0, to: 100 * D - 1, trainMs: 30 * D, testMs: 10 * D })).toHaveLength(6);
  });

  it('anchored: every training window starts at the start and grows; a larger step leaves gaps between tests', () => {
    expect(days(walkForwardWindows({ from: 0, to: 75 * D, trainMs: 30 * D, testMs: 10 * D, stepMs: 20 * D, anchored: true }))).toEqual([
      [0, 30, 30, 40],
      [0, 50, 50, 60],
    ]);
  });

  it('refuses a range too short for one window, and a step shorter than the test window, naming the flags', () => {
    // Windows the range cannot hold: the flags asked for them, a usage error as --step's is (trial 28: it exited 78).
    expect(() => walkForwardWindows({ from: 0, to: 39 * D, trainMs: 30 * D, testMs: 10 * D })).toThrow(UsageError);
    expect(() => walkForwardWindows({ from: 0, to: 39 * D, trainMs: 30 * D, testMs: 10 * D })).toThrow('the range holds 39 d of history, less than --train 30 d + --test 10 d');
    expect(() => walkForwardWindows({ from: 0, to: 99 * D, trainMs: 30 * D, testMs: 10 * D, stepMs: 5 * D })).toThrow('--step (5 d) must be at least --test (10 d)');
    // Two flags that disagree: a usage error (exit 64), as any bad flag is (found by a trial: it exited 78).
    expect(() => walkForwardWindows({ from: 0, to: 99 * D, trainMs: 30 * D, testMs: 10 * D, stepMs: 5 * D })).toThrow(UsageError);
  });
});

describe('walk-forward short windows', () => {
  it('marks an annualised ranking metric of windows under 90 days, and the stitched CAGR, Sharpe and Sortino of test windows under 90 days in all (trial 40)', () => {
    const window = (trainDays: number, testDays: number) => ({ trainFrom: 0, trainTo: trainDays * DAY_MS, testFrom: trainDays * DAY_MS, testTo: (trainDays + testDays) * DAY_MS });
    const result = (metric: 'sharpe' | 'totalReturn', windows: ReturnType<typeof window>[], days: number) =>
      ({ metric, windows, outOfSample: { metrics: { days } } }) as unknown as Parameters<typeof shortWindowMarks>[0];
    const under = (subject: string, days: number) => `${subject} ${days.toFixed(1)} days, under 90: CAGR and Sharpe annualise it and say little`;
    expect(shortWindowMarks(result('sharpe', [window(120, 30), window(89, 100)], 130))).toEqual({
      inSample: ' (!)',
      outOfSample: ' (!)',
      stitched: '',
      warnings: [under('the shortest train window is', 89), under('the shortest test window is', 30)],
    });
    expect(shortWindowMarks(result('sharpe', [window(120, 100)], 100))).toEqual({ inSample: '', outOfSample: '', stitched: '', warnings: [] });
    // Sortino annualises too, but the mark and its warning name CAGR and Sharpe, as a single run's table marks them.
    expect(shortWindowMarks(result('sortino' as 'sharpe', [window(30, 14)], 100)).warnings).toEqual([]);
    expect(shortWindowMarks(result('totalReturn', [window(30, 14), window(30, 14)], 28))).toEqual({
      inSample: '',
      outOfSample: '',
      stitched: ' (!)',
      warnings: [under('the test windows stitched are', 28)],
    });
  });
});

describe('walk-forward', () => {
  it('stitches test curves by their returns, each from where the last ended', () => {
    const p = (t: number, value: number): EquityPoint => ({ t, value, exposure: 0 });
    expect(
      stitch([
        [p(0, 100), p(1, 110)],
        [p(1, 100), p(2, 90)],
        [p(5, 200), p(6, 220)],
      ]).map((x) => [x.t, x.value]),
    ).toEqual([
      [0, 100],
      [1, 110],
      [2, expect.closeTo(99, 9)],
      [5, expect.closeTo(99, 9)],
      [6, expect.closeTo(108.9, 9)],
    ]);
  });

  it('never picks params whose handlers failed on events, whatever their figure, and counts the failures', async () => {
    const run = async (trials: readonly { params: Record<string, unknown>; from: number; to: number }[]) =>
      trials.map((t) => {
        const { sharpe, fail } = t.params as { sharpe: number; fail: boolean };
        const equity = [
          { t: t.from, value: 100, exposure: 0 },
          { t: t.to, value: 100, exposure: 0 },
        ];
        return { runId: 'x', params: t.params, metrics: { sharpe, totalReturn: 0 } as StrategyMetrics, equity, failedEvents: fail ? 3 : 0 };
      });
    const windows = walkForwardWindows({ from: 0, to: 20 * D, trainMs: 10 * D, testMs: 10 * D });
    const grid = [
      { sharpe: 1, fail: false },
      { sharpe: 9, fail: true },
    ];
    const r = await walkForward({ windows, grid, metric: 'sharpe', run });
    expect(r.windows.map((w) => [w.params, w.inSample, w.failedInTraining, w.failedInTest])).toEqual([[grid[0], 1, 3, 0]]);
    // All of them failing, the first is taken, and its figure is no figure.
    const failing = await walkForward({ windows, grid: [grid[1]!], metric: 'sharpe', run });
    expect(failing.windows.map((w) => [w.inSample, w.outOfSample, w.failedInTraining, w.failedInTest])).toEqual([[null, null, 3, 3]]);
  });

  it('picks, on each window, the params with the best in-sample figure (first on a tie; a missing figure ranks last)', async () => {
    // A runner of made-up figures: sharpe = a x window start (in days) - b, or null for b = null.
    const run = async (trials: readonly { params: Record<string, unknown>; from: number; to: number }[]) =>
      trials.map((t) => {
        const { a, b } = t.params as { a: number; b: number | null };
        const sharpe = b === null ? null : a * (t.from / D) - b;
        return {
          runId: 'x',
          params: t.params,
          metrics: { sharpe, totalReturn: (sharpe ?? 0) / 100 } as StrategyMetrics,
          equity: [
            { t: t.from, value: 100, exposure: 0 },
            { t: t.to, value: 100 + (sharpe ?? 0), exposure: 0 },
          ],
          failedEvents: 0,
        };
      });
    const windows = walkForwardWindows({ from: 0, to: 40 * D, trainMs: 10 * D, testMs: 10 * D });
    const grid = [
      { a: 0, b: 0 },
      { a: 1, b: 5 },
      { a: 0, b: null },
      { a: 1, b: 5 },
    ];
    const r = await walkForward({ windows, grid, metric: 'sharpe', run });
    // Window 1 trains from day 0: 0, -5, null, -5 -> the first. Window 2 from day 10: 0, 5 -> the second (not its twin). Window 3: 0, 15.
    expect(r.windows.map((w) => w.params)).toEqual([grid[0], grid[1], grid[1]]);
    expect(r.windows.map((w) => [w.inSample, w.outOfSample])).toEqual([
      [0, 0],
      [5, 15],
      [15, 25],
    ]);
    expect(r.inSampleMean).toBeCloseTo(20 / 3, 12);
    expect(r.outOfSample.equity.map((p) => p.value)).toEqual([100, 100, 115, expect.closeTo(115 * 1.25, 9)]);
  });

  it("shows each window's swept params, and the rest once: the table fits a screen (trial 31)", async () => {
    const fixedPart = { indexId: 'mindex', lookbackHours: 72, notionalUsd: 300, maxPositions: 5 };
    const grid = [0.5, 1].map((zEntry) => ({ ...fixedPart, zEntry }));
    const run = async (trials: readonly { params: Record<string, unknown>; from: number; to: number }[]) =>
      trials.map((t) => ({
        runId: 'x',
        params: t.params,
        metrics: { sharpe: (t.params as { zEntry: number }).zEntry, totalReturn: 0 } as StrategyMetrics,
        equity: [
          { t: t.from, value: 100, exposure: 0 },
          { t: t.to, value: 100, exposure: 0 },
        ],
        failedEvents: 0,
      }));
    const r = await walkForward({ windows: walkForwardWindows({ from: 0, to: 20 * D, trainMs: 10 * D, testMs: 10 * D }), grid, metric: 'sharpe', run });
    expect(splitParams(r.windows[0]!.params, ['zEntry'])).toEqual({ chosen: { zEntry: 1 }, fixed: fixedPart });
    const page = renderWalkForwardPage('wf', r, String, ['zEntry']);
    const table = page.match(/<table id="windows">.*?<\/table>/s)![0];
    expect(table).toContain('<code>{&#34;zEntry&#34;:1}</code>');
    expect(table).not.toContain('lookbackHours');
    expect(page).toContain(`<p id="fixed-params">The same in every window: <code>${JSON.stringify(fixedPart).replace(/"/g, '&#34;')}</code></p>`);
  });

  it('on real replays, the chosen params are those whose own backtest of the training window scores best', async () => {
    const db = buildCache();
    const cache = SnapshotStore.open(db, { readonly: true });
    const file = new URL('../fixtures/backtest/announce-buyer.ts', import.meta.url).pathname;
    const strategy = await loadStrategyModule(file);
    const common = { cache, indexes: ['x'], feeBps: 10, slippageBps: 0 };
    const grid = [{ notionalUsd: 250 }, { notionalUsd: 50 }, { notionalUsd: 500 }];
    const windows = walkForwardWindows({ from: T0, to: T0 + 119 * H, trainMs: 48 * H, testMs: 24 * H });
    expect(windows).toHaveLength(2);
    const r = await walkForward({ windows, grid, metric: 'totalReturn', run: sweepRunner({ db, file, settings: { indexes: ['x'], feeBps: 10, slippageBps: 0 }, workers: 2 }) });
    for (const [i, w] of windows.entries()) {
      const returns = [];
      for (const p of grid) returns.push((await runBacktest({ ...common, strategy: withParams(strategy, file, p), from: w.trainFrom, to: w.trainTo })).metrics.totalReturn);
      const best = returns.indexOf(Math.max(...returns));
      expect(r.windows[i]!.params, `window ${i + 1}`).toEqual(grid[best]);
      expect(r.windows[i]!.inSample).toBe(returns[best]);
    }
    // The first window trains over the announcement (hour 30) and pays fees on 50 USD at least: the smallest notional wins.
    expect(r.windows[0]!.params).toEqual({ notionalUsd: 50 });
    cache.close();
  }, 120_000);
});
