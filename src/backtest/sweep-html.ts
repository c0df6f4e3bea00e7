import { UTC_TIME_OPTIONS, uplotAssets } from '../pages/index.ts';
import { SERIES_COLORS, escapeHtml } from './html.ts';
import { type BacktestReport, HOLES_PREFIX, NARROWED_PREFIX, type ReportSummary } from './report.ts';
import { ANNUALISED_METRICS } from './metrics.ts';
import { fixed, isShortWindow, pct } from './table.ts';

/** One row of a sweep's comparison: what `sweep.json` holds per run. */
export interface SweepRow {
  runId: string;
  params: unknown;
  totalReturn: number | null;
  cagr: number | null;
  sharpe: number | null;
  maxDrawdown: number | null;
  fills: number;
  /** Sales, the trades win rate counts. */
  closedTrades: number;
  winRate: number | null;
  /** Events whose handler failed and were skipped: the run's figures miss what they would have done. */
  failedEvents: number;
  fillsHash: string;
}

export function sweepRow(report: ReportSummary): SweepRow {
  const m = report.metrics;
  return {
    runId: report.runId,
    params: report.strategy.params,
    totalReturn: m.totalReturn,
    cagr: m.cagr,
    sharpe: m.sharpe,
    maxDrawdown: m.maxDrawdown,
    fills: report.fills.count,
    closedTrades: m.closedTrades ?? 0,
    winRate: m.winRate,
    failedEvents: report.events.parked.count,
    fillsHash: report.fills.hash,
  };
}

export const SWEEP_FORMAT = 'indexbot-sweep/1';

/** `sweep.json`: what a sweep ran and how, to reproduce it or compare it with another later, then one row per run. */
export interface SweepFile {
  format: typeof SWEEP_FORMAT;
  /** When the sweep was written: the one field two sweeps of the same inputs differ in. */
  createdAt: string;
  /** The indexbot version that ran it. */
  indexbotVersion: string;
  /** The strategy every run replayed, as each report.json names it (the file relative to the working directory). */
  strategy: { name: string; file: string; sourceHash: string };
  /** The settings every run shared, as in each report.json: range, indexes, interval, cash, fees, slippage, drift threshold, gaps. */
  settings: BacktestReport['settings'];
  /** Each param whose value differs between the runs, with its values in the order the runs first take them. */
  swept: Record<string, unknown[]>;
  runs: SweepRow[];
}

/** The whole `sweep.json` of the runs' reports, in the runs' order. */
export function sweepFile(reports: readonly ReportSummary[], made: { createdAt: string; indexbotVersion: string }): SweepFile {
  const { name, file, sourceHash } = reports[0]!.strategy;
  return {
    format: SWEEP_FORMAT,
    createdAt: made.createdAt,
    indexbotVersion: made.indexbotVersion,
    strategy: { name, file, sourceHash },
    settings: reports[0]!.settings,
    swept: sweptParams(reports.map((r) => r.strategy.params)),
    runs: reports.map(sweepRow),
  };
}

function sweptParams(params: readonly unknown[]): Record<string, unknown[]> {
  const values = new Map<string, Map<string, unknown>>();
  for (const p of params) {
    for (const [key, value] of Object.entries(p !== null && typeof p === 'object' ? p : {})) {
      if (!values.has(key)) values.set(key, new Map());
      values.get(key)!.set(JSON.stringify(value), value);
    }
  }
  // A param some run lacks differs between runs too.
  const swept = [...values].filter(([key, seen]) => seen.size > 1 || params.some((p) => p === null || typeof p !== 'object' || !(key in p)));
  return Object.fromEntries(swept.map(([key, seen]) => [key, [...seen.values()]]));
}

/**
 * A run's params as a table a screen holds shows them: the swept keys, which differ between
 * runs (a sweep's, a walk-forward's candidates), apart from the rest, the same in every run
 * and said once (trial 31: a walk-forward row of every param pushed its page's last column off screen).
 */
export function splitParams(params: unknown, swept: readonly string[]): { chosen: Record<string, unknown>; fixed: Record<string, unknown> } {
  const entries = Object.entries(params !== null && typeof params === 'object' ? params : {});
  return { chosen: Object.fromEntries(entries.filter(([k]) => swept.includes(k))), fixed: Object.fromEntries(entries.filter(([k]) => !swept.includes(k))) };
}

/** The rows with each run's params narrowed to the swept ones; all of them when none differ. */
export function sweptOnly(rows: readonly SweepRow[], swept: Record<string, unknown[]>): SweepRow[] {
  const keys = Object.keys(swept);
  if (keys.length === 0) return [...rows];
  return rows.map((row) => ({ ...row, params: splitParams(row.params, keys).chosen }));
}

/** A sweep's columns, on its page and in its terminal table. */
export const SWEEP_COLUMNS: [key: keyof SweepRow, label: string, format: (v: never) => string][] = [
  ['runId', 'run', (v: string) => v],
  ['params', 'params', (v: unknown) => JSON.stringify(v)],
  ['totalReturn', 'return', pct],
  ['cagr', 'CAGR', pct],
  ['sharpe', 'Sharpe', (v: number | null) => fixed(v)],
  ['maxDrawdown', 'max DD', pct],
  ['fills', 'fills', String],
  ['closedTrades', 'sales', String],
  ['winRate', 'win rate', pct],
  ['failedEvents', 'failed events', String],
  ['fillsHash', 'fills hash', (v: string) => v.slice(0, 8)],
];

/**
 * A sweep's column headings, and the warning its runs share (one range for all): when the
 * window is short, CAGR and Sharpe are marked (!) as a single run's table marks them.
 */
export function sweepHeadings(reports: readonly ReportSummary[]): { labels: string[]; warnings: string[] } {
  const first = reports[0];
  const short = first !== undefined && isShortWindow(first);
  // Every run of a sweep replays one range: what qualifies one run's figures (a short window, a
  // range narrowed to the cache, holes run past) qualifies them all, and is said once (trial 38:
  // a sweep narrowed under --allow-gaps said so in no table and no page).
  const warnings = first ? [...(short ? [first.warnings[0]!] : []), ...[NARROWED_PREFIX, HOLES_PREFIX].flatMap((prefix) => first.warnings.filter((w) => w.startsWith(prefix)))] : [];
  return { labels: SWEEP_COLUMNS.map(([key, label]) => (short && ANNUALISED_METRICS.includes(key) ? `${label} (!)` : label)), warnings };
}

/** The most equity curves a sweep's page draws, one per colour: a grid of thousands drew a line each, a page of hundreds of megabytes that no browser could show. */
export const SWEEP_PAGE_CURVES = SERIES_COLORS.length;

/** The runs whose curves the page draws: all up to {@link SWEEP_PAGE_CURVES}, else those of highest total return (a run with none last), in the runs' order. */
export function drawnRuns(rows: readonly Pick<SweepRow, 'totalReturn'>[], limit = SWEEP_PAGE_CURVES): number[] {
  const order = rows.map((_, i) => i);
  if (rows.length <= limit) return order;
  const best = order.sort((a, b) => (rows[b]!.totalReturn ?? Number.NEGATIVE_INFINITY) - (rows[a]!.totalReturn ?? Number.NEGATIVE_INFINITY) || a - b).slice(0, limit);
  return best.sort((a, b) => a - b);
}

/**
 * A sweep's comparison page, one file with uPlot inlined: a table of every run's figures
 * (click a heading to sort by it) and the equity curves of up to {@link SWEEP_PAGE_CURVES}
 * of them on one chart, each drawn run's row marked in its colour.
 */
export function renderSweepHtml(allParams: readonly SweepRow[], reports: readonly ReportSummary[]): string {
  const { js, css } = uplotAssets();
  const swept = sweptParams(reports.map((r) => r.strategy.params));
  const rows = sweptOnly(allParams, swept);
  const fixed = Object.keys(swept).length === 0 ? {} : splitParams(reports[0]!.strategy.params, Object.keys(swept)).fixed;
  // Every run of a sweep has the same range, so the same daily times: one x axis.
  const x = reports[0]!.equity.map((p) => (p[0] as number) / 1000);
  // The legend names each run by its params, as the table's second column does.
  const drawn = drawnRuns(allParams);
  const colorOf = new Map(drawn.map((run, k) => [run, SERIES_COLORS[k % SERIES_COLORS.length]!]));
  const series = drawn.map((i) => ({ label: JSON.stringify(rows[i]!.params), color: colorOf.get(i)!, values: reports[i]!.equity.map((p) => p[1] as number) }));
  const headings = sweepHeadings(reports);
  const head = headings.labels.map((label, i) => `<th data-col="${i}">${escapeHtml(label)}</th>`).join('');
  const body = rows
    .map((row, i) => {
      const cells = SWEEP_COLUMNS.map(([key, , format]) => {
        const v = row[key];
        const sortKey = typeof v === 'number' ? String(v) : v === null ? '' : JSON.stringify(v);
        const text = escapeHtml(format(v as never));
        // Each run's report sits in a folder named by its run id beside this page.
        const shown = key === 'runId' ? `<a href="${escapeHtml(encodeURIComponent(v as string))}/report.html">${text}</a>` : text;
        return `<td data-v="${escapeHtml(sortKey)}">${shown}</td>`;
      }).join('');
      const color = colorOf.get(i);
      return color === undefined ? `<tr>${cells}</tr>` : `<tr style="border-left:4px solid ${color}">${cells}</tr>`;
    })
    .join('');
  const data = JSON.stringify({ x, series }).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sweep of ${rows.length} runs</title>
<style>${css}
body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #eee}th{cursor:pointer;user-select:none}th.sorted::after{content:attr(data-dir)}td:nth-child(2){text-align:left;font-family:monospace}</style>
</head><body>
<h1>Sweep: ${rows.length} runs of ${escapeHtml(reports[0]!.strategy.name)}</h1>
<p>${escapeHtml(reports[0]!.settings.from ?? '')} .. ${escapeHtml(reports[0]!.settings.to ?? '')}, indexes ${escapeHtml(reports[0]!.settings.indexes.join(', '))}. Click a heading to sort.</p>
${Object.keys(fixed).length === 0 ? '' : `<p id="fixed-params">The same in every run: <code>${escapeHtml(JSON.stringify(fixed))}</code></p>`}
<table id="runs"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>
${headings.warnings.map((w) => `<p class="range-warning">(!) ${escapeHtml(w)}</p>`).join('\n')}
<h2>Equity</h2>
${drawn.length < rows.length ? `<p id="drawn-note">The ${drawn.length} runs of highest total return, their rows marked in the table; each run's report.html draws its own.</p>` : ''}
<div id="equity-chart"></div>
<script>${js}</script>
<script>
const D = ${data};
const table = document.getElementById('runs');
table.querySelectorAll('th').forEach((th) => th.addEventListener('click', () => {
  const col = Number(th.dataset.col);
  const dir = th.dataset.dir === ' ▲' ? ' ▼' : ' ▲';
  table.querySelectorAll('th').forEach((o) => { o.classList.remove('sorted'); delete o.dataset.dir; });
  th.classList.add('sorted');
  th.dataset.dir = dir;
  const value = (tr) => tr.children[col].dataset.v;
  const rows = [...table.tBodies[0].rows].sort((a, b) => {
    const [p, q] = [value(a), value(b)];
    const numeric = p !== '' && q !== '' && !isNaN(p) && !isNaN(q);
    const c = numeric ? Number(p) - Number(q) : p === '' ? 1 : q === '' ? -1 : p.localeCompare(q);
    return dir === ' ▲' ? c : -c;
  });
  rows.forEach((r) => table.tBodies[0].appendChild(r));
}));
const width = () => Math.min(1100, document.body.clientWidth - 20);
const u = new uPlot({
  ${UTC_TIME_OPTIONS},
  width: width(), height: 420,
  scales: { x: { time: true } },
  axes: [{ stroke: '#333', grid: { stroke: '#eee' } }, { stroke: '#333', size: 80, grid: { stroke: '#eee' }, values: (u, vals) => vals.map((v) => v.toFixed(0)) }],
  series: [{}, ...D.series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5, points: { show: false } }))],
}, [D.x, ...D.series.map((s) => s.values)], document.getElementById('equity-chart'));
window.addEventListener('resize', () => u.setSize({ width: width(), height: 420 }));
window.indexbotSweepChart = u;
</script>
</body></html>
`;
}
