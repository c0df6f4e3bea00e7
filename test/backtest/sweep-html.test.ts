import { describe, expect, it } from 'vitest';
import { buildReport, reportSummary, runBacktest } from '../../src/backtest/index.ts';
import { SWEEP_PAGE_CURVES, drawnRuns, renderSweepHtml, sweepFile } from '../../src/backtest/sweep-html.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { loadStrategyModule, withParams } from '../../src/strategy/index.ts';
import { H, T0, buildCache } from '../helpers/backtest-cache.ts';

describe('sweep.html', () => {
  it('draws every run up to its limit, else those of highest total return, a run with none last, in the runs order', () => {
    const rows = (returns: (number | null)[]) => returns.map((totalReturn) => ({ totalReturn }));
    expect(drawnRuns(rows([0.1, null, -0.2]), 3)).toEqual([0, 1, 2]);
    expect(drawnRuns(rows([0.1, null, -0.2, 0.3, 0.1]), 3)).toEqual([0, 3, 4]);
    // A return beats none; between two with none, the earlier run.
    expect(drawnRuns(rows([null, null, -0.5]), 2)).toEqual([0, 2]);
  });

  it("a grid's page draws the curves of its best runs only, marks their rows, and says so (a grid of thousands drew one line each)", async () => {
    const file = new URL('../fixtures/backtest/announce-buyer.ts', import.meta.url).pathname;
    const cache = SnapshotStore.open(buildCache(), { readonly: true });
    try {
      const result = await runBacktest({ cache, strategy: withParams(await loadStrategyModule(file), file, {}), indexes: ['x'], from: T0, to: T0 + 119 * H });
      const summary = reportSummary(buildReport(result));
      expect(Object.keys(summary)).not.toContain('benchmarkCurves');
      // Runs alike but for their params and total return: run i returned i %.
      const runs = Array.from({ length: SWEEP_PAGE_CURVES + 5 }, (_, i) => ({
        ...summary,
        runId: `bt_${i}`,
        strategy: { ...summary.strategy, params: { i } },
        metrics: { ...summary.metrics, totalReturn: i / 100 },
      }));
      const html = renderSweepHtml(sweepFile(runs, { createdAt: '', indexbotVersion: '' }).runs, runs);
      const data = JSON.parse(/const D = (.*);\n/.exec(html)![1]!) as { series: { label: string }[] };
      expect(data.series.map((s) => JSON.parse(s.label).i)).toEqual(Array.from({ length: SWEEP_PAGE_CURVES }, (_, k) => k + 5));
      expect(html.match(/<tr style="border-left/g)).toHaveLength(SWEEP_PAGE_CURVES);
      expect(html).toContain(`<p id="drawn-note">The ${SWEEP_PAGE_CURVES} runs of highest total return`);
      const few = runs.slice(0, 3);
      const all = renderSweepHtml(sweepFile(few, { createdAt: '', indexbotVersion: '' }).runs, few);
      expect((JSON.parse(/const D = (.*);\n/.exec(all)![1]!) as { series: unknown[] }).series).toHaveLength(3);
      expect(all).not.toContain('drawn-note');
    } finally {
      cache.close();
    }
  });
});
