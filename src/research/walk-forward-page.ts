import { escapeHtml, fixed, pct, splitParams } from '../backtest/index.ts';
import { UTC_TIME_OPTIONS, uplotAssets } from '../pages/index.ts';
import { type WalkForwardResult, shortWindowMarks } from './walk-forward.ts';

const day = (t: number) => new Date(t).toISOString().slice(0, 10);

/** The out-of-sample curve (test windows stitched) and the params chosen per window, on one page. */
export function renderWalkForwardPage(title: string, r: WalkForwardResult, format: (v: number | null) => string, swept: readonly string[]): string {
  const { js, css } = uplotAssets();
  const { fixed: same } = splitParams(r.windows[0]?.params, swept);
  const data = [r.outOfSample.equity.map((p) => p.t / 1000), r.outOfSample.equity.map((p) => p.value)];
  const rows = r.windows.map(
    (w, i) =>
      `<tr><th>${i + 1}</th><td>${day(w.trainFrom)} .. ${day(w.trainTo)}</td><td>${day(w.testFrom)} .. ${day(w.testTo)}</td><td><code>${escapeHtml(JSON.stringify(splitParams(w.params, swept).chosen))}</code></td><td>${format(w.inSample)}</td><td>${format(w.outOfSample)}</td><td>${pct(w.testReturn)}</td></tr>`,
  );
  const m = r.outOfSample.metrics;
  const marks = shortWindowMarks(r);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>${css}
body{font:14px system-ui,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#222}table{border-collapse:collapse}td,th{padding:3px 9px;text-align:right;border-bottom:1px solid #eee}td:nth-child(4){text-align:left}</style>
</head><body><main>
<h1>${escapeHtml(title)}</h1>
<p>Out of sample, the test windows stitched: return ${pct(m.totalReturn)}, CAGR${marks.stitched} ${pct(m.cagr)}, Sharpe${marks.stitched} ${fixed(m.sharpe)}, Sortino ${fixed(m.sortino)}, max drawdown ${pct(m.maxDrawdown)} over ${fixed(m.days, 1)} days. In-sample mean ${escapeHtml(r.metric)}: ${format(r.inSampleMean)}.</p>
${marks.warnings.map((w) => `<p class="range-warning">(!) ${escapeHtml(w)}</p>`).join('\n')}
<div id="oos-chart"></div>
<h2>Windows</h2>
${Object.keys(same).length === 0 ? '' : `<p id="fixed-params">The same in every window: <code>${escapeHtml(JSON.stringify(same))}</code></p>`}
<table id="windows"><thead><tr><th>#</th><th>train</th><th>test</th><th>chosen params</th><th>${escapeHtml(r.metric)} in${marks.inSample}</th><th>${escapeHtml(r.metric)} out${marks.outOfSample}</th><th>test return</th></tr></thead><tbody>${rows.join('')}</tbody></table>
</main>
<script>${js}</script>
<script>
const D = ${JSON.stringify(data)};
new uPlot({ ${UTC_TIME_OPTIONS},
  width: Math.max(320, document.querySelector('main').clientWidth), height: 320, cursor: { drag: { x: true, y: false } },
  axes: [{}, { size: 80, values: (u, vs) => vs.map((v) => Math.round(v).toLocaleString('en-US')) }],
  series: [{ label: 'time' }, { label: 'out-of-sample equity (USD)', stroke: '#1f77b4', width: 1.5, points: { show: false } }],
}, D, document.getElementById('oos-chart'));
</script>
</body></html>
`;
}
