import { escapeHtml, fixed, pct } from '../backtest/index.ts';
import { uplotAssets } from '../pages/index.ts';
import { type StoredTrial, ranked } from './optimize.ts';

/** A sampled float with six significant digits: tables stay readable; trials.jsonl keeps every digit. */
export const shortValue = (v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? String(Number(v.toPrecision(6))) : JSON.stringify(v));

/** The search on one page: every trial's figure and the best so far by trial number, and the best trials. */
export function renderOptimizePage(title: string, metric: string, trials: readonly StoredTrial[], top = 20): string {
  const { js, css } = uplotAssets();
  let best = Number.NEGATIVE_INFINITY;
  const data = [trials.map((t) => t.n), trials.map((t) => t.score), trials.map((t) => (t.score !== null && t.score > best ? (best = t.score) : Number.isFinite(best) ? best : null))];
  const keys = [...new Set(trials.flatMap((t) => Object.keys(t.params)))];
  const rows = ranked(trials)
    .slice(0, top)
    .map(
      (t, i) =>
        `<tr><th>${i + 1}</th><td>${t.n}</td>${keys.map((k) => `<td>${escapeHtml(shortValue(t.params[k]))}</td>`).join('')}<td>${fixed(t.score, 4)}</td><td>${pct(t.metrics.totalReturn)}</td><td>${fixed(t.metrics.sharpe)}</td><td>${pct(t.metrics.maxDrawdown)}</td><td>${t.metrics.trades}</td></tr>`,
    );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>${css}
body{font:14px system-ui,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#222}table{border-collapse:collapse}td,th{padding:3px 9px;text-align:right;border-bottom:1px solid #eee}</style>
</head><body><main>
<h1>${escapeHtml(title)}</h1>
<p>${trials.length} trials, ranked by ${escapeHtml(metric)} (higher is better).</p>
<div id="trials-chart"></div>
<h2>Best ${Math.min(top, trials.length)} trials</h2>
<table id="best"><thead><tr><th>rank</th><th>trial</th>${keys.map((k) => `<th>${escapeHtml(k)}</th>`).join('')}<th>${escapeHtml(metric)}</th><th>return</th><th>Sharpe</th><th>max DD</th><th>fills</th></tr></thead><tbody>${rows.join('')}</tbody></table>
</main>
<script>${js}</script>
<script>
const D = ${JSON.stringify(data).replace(/</g, '\\u003c')};
new uPlot({ width: Math.max(320, document.querySelector('main').clientWidth), height: 320, scales: { x: { time: false } },
  axes: [{ label: 'trial' }, { label: ${JSON.stringify(metric)}, size: 70 }],
  series: [{ label: 'trial' }, { label: ${JSON.stringify(metric)}, stroke: '#1f77b4', width: 0, points: { show: true, size: 6, fill: '#1f77b4' } }, { label: 'best so far', stroke: '#d62728', width: 2, points: { show: false } }],
}, D, document.getElementById('trials-chart'));
</script>
</body></html>
`;
}
