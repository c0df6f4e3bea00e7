import { UTC_TIME_OPTIONS, uplotAssets } from '../pages/index.ts';
import { valueAsOf } from './metrics.ts';
import { type BacktestReport, benchmarkCurveRows, gapText, gapsInRun, labelOf, reportFillRows } from './report.ts';
import { amount, fillCells, fixed, hours, isShortWindow, metricRows, monthlyGrid, pct, usd } from './table.ts';

/** The charts' series colours, in order. */
export const SERIES_COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
/** The buy-and-hold lines under the trade markers: none green or red, the markers' colours (trial 24 read a hold line as the strategy's trades). */
const BENCHMARK_COLORS = SERIES_COLORS.slice(1).filter((c) => c !== '#2ca02c' && c !== '#d62728');
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** JSON safe inside a script element. */
const scriptJson = (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c');

/**
 * Trades the page lists and marks on the equity chart: the last ones, as the terminal table
 * shows the last ones; report.json lists every fill. A 4-year run of 40 indexes made 49,680
 * fills, a page of 13 MB with as many DOM markers, and rendering it took more memory than the run.
 */
export const PAGE_TRADES = 1_000;

/** The fills the page shows. */
const pageTrades = (report: BacktestReport) => [...reportFillRows(report.fills, -PAGE_TRADES)];

/** What the page's script draws: times in seconds (uPlot's unit), one x axis for every series of a chart. */
export function chartData(report: BacktestReport) {
  const x = report.equity.map((p) => (p[0] as number) / 1000);
  const cash = report.settings.cash;
  const equity = report.equity.map((p) => ({ t: p[0] as number, value: p[1] as number }));
  const benchmarks = Array.from(benchmarkCurveRows(report.benchmarkCurves), (b, i) => {
    const points = b.points.map(([t, v]) => ({ t: t as number, value: v as number }));
    const base = points[0]?.value ?? 1;
    return { label: `hold ${b.indexId}`, color: BENCHMARK_COLORS[i % BENCHMARK_COLORS.length]!, values: equity.map((p) => (points.length === 0 ? null : (valueAsOf(points, p.t) / base) * cash)) };
  });
  // A marker sits on the drawn line: linear between the daily points around the fill.
  const onLine = (t: number) => {
    let i = 0;
    while (i + 1 < equity.length && equity[i + 1]!.t <= t) i++;
    const a = equity[i]!;
    const b = equity[i + 1];
    return b === undefined || b.t === a.t ? a.value : a.value + ((b.value - a.value) * (t - a.t)) / (b.t - a.t);
  };
  const markers = pageTrades(report).map((f) => {
    const t = Date.parse(f.at!);
    const pnl = f.realisedPnl === null ? '' : `, realised ${usd(f.realisedPnl)} USD after ${hours(f.holdingHours)}`;
    return { t: t / 1000, y: onLine(t), side: f.side, text: `${f.at!.slice(0, 16)} ${f.side} ${amount(f.quantity)} ${labelOf(report, f.instrument)} at ${amount(f.price)}${pnl}` };
  });
  return {
    x,
    equity: [{ label: report.strategy.name, color: SERIES_COLORS[0]!, values: equity.map((p) => p.value) }, ...benchmarks],
    markers,
    drawdown: { label: 'drawdown', color: '#d62728', values: report.equity.map((p) => p[2] as number) },
    exposure: { label: 'exposure', color: '#2ca02c', values: report.equity.map((p) => p[3] as number) },
  };
}

function table(head: string[], rows: string[][], cls = ''): string {
  return `<table${cls ? ` class="${cls}"` : ''}><thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c, i) => (i === 0 ? `<th>${escapeHtml(c)}</th>` : `<td>${escapeHtml(c)}</td>`)).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

/** Green for a gain, red for a loss, stronger up to 10 % a month. */
function heat(r: number | null): string {
  if (r === null) return '';
  const a = (0.1 + Math.min(1, Math.abs(r) / 0.1) * 0.6).toFixed(2);
  return ` style="background:rgba(${r >= 0 ? '0,160,60' : '215,40,40'},${a})"`;
}

function metricsTable(report: BacktestReport): string {
  const short = isShortWindow(report);
  const head = ['', report.strategy.name, ...report.benchmarks.map((b) => `hold ${b.indexId}`)];
  const warn = short ? ` <span class="warn" title="${escapeHtml(report.warnings[0]!)}">⚠ ${report.metrics.days?.toFixed(0)}-day window</span>` : '';
  const rows = metricRows(report.metrics).map(
    (r) => `<tr><th>${escapeHtml(r.label)}${r.annualised ? warn : ''}</th><td>${escapeHtml(r.strategy)}</td>${report.benchmarks.map((b) => `<td>${escapeHtml(r.benchmark(b))}</td>`).join('')}</tr>`,
  );
  return `<table id="metrics"><thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function monthlyTable(report: BacktestReport): string {
  const grid = monthlyGrid(report.monthlyReturns);
  const rows = grid.map((y) => `<tr><th>${y.year}</th>${y.months.map((m) => `<td${heat(m)}>${m === null ? '' : pct(m)}</td>`).join('')}<td${heat(y.total)}><b>${pct(y.total)}</b></td></tr>`);
  return `<table id="monthly"><thead><tr><th></th>${MONTHS.map((m) => `<th>${m}</th>`).join('')}<th>year</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/** One HTML file with everything inline (uPlot included): opens from disk in any browser, offline. */
export function renderHtml(report: BacktestReport): string {
  const { js, css } = uplotAssets();
  const cash = report.settings.cash;
  const trades = pageTrades(report).map((f) => {
    const [at, ...rest] = fillCells(report, f);
    return [at!.replace('T', ' '), ...rest];
  });
  const instruments = report.instruments.map((i) => [labelOf(report, i.instrument), String(i.buys), String(i.sells), usd(i.feesUsd), usd(i.realisedPnl), usd(i.unrealisedPnl), usd(i.totalPnl)]);
  const rejections = report.rejections.byReason.map((r) => [r.code, String(r.count), r.instruments.map((i) => labelOf(report, i)).join(', '), r.example]);
  const alerts = report.alerts.list.map((a) => [a.at!.slice(0, 16).replace('T', ' '), a.message]);
  const open = report.openPositions.map((p) => [labelOf(report, p.instrument), amount(p.quantity), amount(p.price), usd(p.valueUsd), usd(p.unrealisedPnl)]);
  const dd = report.drawdowns.map((d) => [d.start!.slice(0, 10), d.trough!.slice(0, 10), d.recovery?.slice(0, 10) ?? 'not yet', pct(d.depth), `${fixed(d.days, 1)} d`]);
  const gaps = gapsInRun(report).map(gapText);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Backtest ${escapeHtml(report.strategy.name)} ${escapeHtml(report.runId)}</title>
<style>${css}
body{font:14px system-ui,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#222}
table{border-collapse:collapse;margin:6px 0 14px}td,th{padding:3px 9px;text-align:right;border-bottom:1px solid #eee;white-space:nowrap}tbody th,thead th:first-child{text-align:left}
h2{margin:28px 0 6px;font-size:18px}figure{margin:8px 0 18px}figcaption{font-weight:600;margin:0 0 4px}code{background:#f4f4f4;padding:1px 4px}
.warn{color:#b45309;font-weight:600;cursor:help}.warnings{background:#fff7e6;border:1px solid #f5d08a;padding:6px 10px}
.scroll{max-height:360px;overflow:auto;border:1px solid #eee}.alerts td,.alerts thead th{text-align:left}.alerts td{white-space:normal}.rejections td:nth-child(n+3){white-space:normal;overflow-wrap:anywhere;text-align:left;min-width:12em}.note{color:#555;font-size:13px}
.trade-marker{position:absolute;width:0;height:0;opacity:.75;border-left:6px solid transparent;border-right:6px solid transparent;transform:translate(-6px,-4px);cursor:help;z-index:5}
.trade-marker.buy{border-bottom:10px solid #15803d}.trade-marker.sell{border-top:10px solid #b91c1c;transform:translate(-6px,-6px)}
#tooltip{position:fixed;pointer-events:none;background:rgba(255,255,255,.95);border:1px solid #bbb;padding:4px 8px;font-size:12px;display:none;z-index:10;white-space:pre}
</style>
</head><body><main>
<h1>Backtest: ${escapeHtml(report.strategy.name)}</h1>
<p>${escapeHtml(report.settings.from!)} .. ${escapeHtml(report.settings.to!)} (${report.settings.interval}), indexes ${escapeHtml(report.settings.indexes.join(', '))}, cash ${cash} USD, fee ${report.settings.feeBps} bps, slippage ${report.settings.slippageBps} bps.<br>
Params <code>${escapeHtml(JSON.stringify(report.strategy.params))}</code>, run <code>${report.runId}</code>, ${report.fills.count} fills (hash <code>${report.fills.hash.slice(0, 16)}</code>).</p>
${report.warnings.length > 0 ? `<p class="warnings">${report.warnings.map((w) => `⚠ ${escapeHtml(w)}`).join('<br>')}</p>` : ''}
<figure><figcaption>Equity (USD), with buy-and-hold of each index from the same cash; ▲ buy, ▼ sell (hover a marker for the fill)</figcaption><div id="equity-chart"></div></figure>
<figure><figcaption>Drawdown from the running peak</figcaption><div id="drawdown-chart"></div></figure>
<figure><figcaption>Exposure: open positions over equity</figcaption><div id="exposure-chart"></div></figure>
<p class="note">Drag across a chart to zoom in (all three follow), double-click to zoom out; click a legend entry to hide its series.</p>
<h2>Figures</h2>
${metricsTable(report)}
<h2>Monthly returns</h2>
${monthlyTable(report)}
<h2>Worst drawdowns</h2>
${dd.length === 0 ? '<p>None: the curve never fell below a previous peak.</p>' : table(['peak', 'trough', 'recovered', 'depth', 'length'], dd)}
<h2>P&amp;L by instrument (USD)</h2>
${instruments.length === 0 ? '<p>No trades.</p>' : table(['instrument', 'buys', 'sells', 'fees', 'realised', 'unrealised', 'total'], instruments)}
<h2>Alerts: ${report.alerts.count}</h2>
${alerts.length === 0 ? '<p>The strategy raised no alert.</p>' : `${report.alerts.count > alerts.length ? `<p class="note">The first ${alerts.length}.</p>` : ''}<div class="scroll">${table(['time (UTC)', 'message'], alerts, 'alerts')}</div>`}
<h2>Rejected orders: ${report.rejections.count}</h2>
${rejections.length === 0 ? '<p>The paper broker refused no order.</p>' : table(['reason', 'count', 'instruments', 'first message'], rejections, 'rejections')}
<h2>Open positions at the end: ${open.length}</h2>
${open.length === 0 ? '' : table(['instrument', 'quantity', 'last price', 'value', 'unrealised'], open)}
<h2>Trades: ${report.fills.count}</h2>
${trades.length === 0 ? '' : `${report.fills.count > trades.length ? `<p class="note">The last ${trades.length}, also the only ones marked on the chart; report.json lists all ${report.fills.count}.</p>` : ''}<div class="scroll">${table(['time (UTC)', 'instrument', 'side', 'quantity', 'price', 'fee', 'realised P&L', 'held'], trades, 'trades')}</div>`}
<h2>Conventions</h2>
<p class="note" id="conventions">${escapeHtml(report.conventions)}</p>
<p class="note">${gaps.length === 0 ? 'No gaps in the cached history.' : `Gaps in the cached history: ${escapeHtml(gaps.join('; '))}`}</p>
</main>
<div id="tooltip"></div>
<script>${js}</script>
<script type="application/json" id="chart-data">${scriptJson(chartData(report))}</script>
<script>${PAGE_SCRIPT}</script>
</body></html>
`;
}

/**
 * A percent axis's tick labels with as many decimals as their step needs, one at least: ticks
 * 0.25 % apart read -0.3 % and -0.8 % at one decimal (trial 37). Runs in the page, as its source.
 */
export function percentTicks(ticks: number[]): string[] {
  const step = ticks.length > 1 ? Math.abs(ticks[1]! - ticks[0]!) * 100 : 0;
  let decimals = 1;
  while (decimals < 4 && step > 0 && Math.abs(step * 10 ** decimals - Math.round(step * 10 ** decimals)) > 1e-6) decimals++;
  return ticks.map((v) => `${(v * 100).toFixed(decimals)}%`);
}

/** Draws the three charts with uPlot: synced cursor and zoom, a tooltip, DOM trade markers. */
const PAGE_SCRIPT = `
const D = JSON.parse(document.getElementById('chart-data').textContent);
const tip = document.getElementById('tooltip');
const charts = [];
const width = () => Math.max(320, document.querySelector('main').clientWidth);
const money = (v) => v == null ? '—' : Math.round(v).toLocaleString('en-US');
const percent = (v) => v == null ? '—' : (v * 100).toFixed(1) + '%';
const percentTicks = ${percentTicks.toString()};
const day = (s) => new Date(s * 1000).toISOString().slice(0, 16).replace('T', ' ');
function tooltip(fmt) {
  return { hooks: { setCursor: (u) => {
    const i = u.cursor.idx;
    if (i == null || u.cursor.left < 0) { tip.style.display = 'none'; return; }
    const lines = [day(u.data[0][i]) + ' UTC'];
    u.series.forEach((s, k) => { if (k > 0 && s.show) lines.push(s.label + ': ' + fmt(u.data[k][i])); });
    const r = u.over.getBoundingClientRect();
    tip.textContent = lines.join('\\n');
    tip.style.display = 'block';
    tip.style.left = Math.min(r.left + u.cursor.left + 14, window.innerWidth - tip.offsetWidth - 8) + 'px';
    tip.style.top = (r.top + u.cursor.top + 14) + 'px';
  } } };
}
function markers() {
  const els = D.markers.map((m) => {
    const el = document.createElement('div');
    el.className = 'trade-marker ' + m.side;
    el.title = m.text;
    return el;
  });
  return { hooks: {
    ready: (u) => els.forEach((el) => u.over.appendChild(el)),
    draw: (u) => D.markers.forEach((m, i) => {
      const x = u.valToPos(m.t, 'x');
      const y = u.valToPos(m.y, 'y');
      const inside = x >= 0 && x <= u.over.clientWidth && y >= 0 && y <= u.over.clientHeight;
      els[i].style.display = inside ? 'block' : 'none';
      els[i].style.left = x + 'px';
      els[i].style.top = y + 'px';
    }),
  } };
}
function chart(id, series, fmt, opts = {}) {
  const u = new uPlot({
    ${UTC_TIME_OPTIONS},
    width: width(), height: opts.height || 300,
    cursor: { sync: { key: 'bt' }, drag: { x: true, y: false } },
    scales: { x: { time: true }, y: opts.y || {} },
    axes: [{ stroke: '#333', grid: { stroke: '#eee' } }, { stroke: '#333', size: 80, grid: { stroke: '#eee' }, values: (u, vals) => (opts.ticks ? opts.ticks(vals) : vals.map(fmt)) }],
    series: [{ label: 'time', value: (u, v) => v == null ? '—' : day(v) }, ...series.map((s) => ({
      label: s.label, stroke: s.color, width: 1.5, points: { show: false }, fill: opts.fill ? s.color + '44' : undefined, spanGaps: true, value: (u, v) => fmt(v),
    }))],
    plugins: [tooltip(fmt), ...(opts.plugins || [])],
    hooks: { setScale: [(u, key) => {
      if (key !== 'x') return;
      for (const o of charts) if (o !== u && (o.scales.x.min !== u.scales.x.min || o.scales.x.max !== u.scales.x.max)) o.setScale('x', { min: u.scales.x.min, max: u.scales.x.max });
    }] },
  }, [D.x, ...series.map((s) => s.values)], document.getElementById(id));
  u.root.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
  charts.push(u);
  return u;
}
chart('equity-chart', D.equity, money, { height: 360, plugins: [markers()] });
chart('drawdown-chart', [D.drawdown], percent, { fill: true, height: 200, ticks: percentTicks, y: { range: (u, min) => [Math.min(min, -0.01), 0] } });
chart('exposure-chart', [D.exposure], percent, { fill: true, height: 180, ticks: percentTicks, y: { range: (u, min, max) => [0, Math.max(1, max)] } });
window.addEventListener('resize', () => charts.forEach((u) => u.setSize({ width: width(), height: u.height })));
window.indexbotCharts = charts;
`;
