import { relative } from 'node:path';
import type { BacktestResult } from './replay.ts';
import { type ReturnMetrics, type StrategyMetrics, drawdowns } from './metrics.ts';

export const REPORT_FORMAT = 'indexbot-backtest/1';

/** Twelve significant digits: enough for any figure, and the same bytes on every run. */
const num = (x: number | null): number | null => (x === null || !Number.isFinite(x) ? null : Number(x.toPrecision(12)));
const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

function roundAll<T extends object>(m: T): { [K in keyof T]: T[K] extends number ? number | null : T[K] } {
  return Object.fromEntries(Object.entries(m).map(([k, v]) => [k, typeof v === 'number' ? num(v) : v])) as never;
}

/**
 * What `report.json` holds. Nothing in it depends on the machine, the wall clock or the run
 * order: the same cache, strategy file and params give the same bytes, and `fills.hash`
 * tells at a glance whether two runs traded alike.
 */
export function buildReport(r: BacktestResult) {
  const dd = drawdowns(r.equity);
  return {
    format: REPORT_FORMAT,
    runId: r.runId,
    strategy: { name: r.strategy.name, file: relative(process.cwd(), r.strategy.file), sourceHash: r.strategy.sourceHash, params: r.strategy.params },
    settings: { ...r.settings, from: iso(r.settings.from), to: iso(r.settings.to) },
    coverage: r.coverage.map((c) => ({ indexId: c.indexId, points: c.points, first: iso(c.first), last: iso(c.last), gaps: c.gaps.map((g) => ({ from: iso(g.from), to: iso(g.to) })) })),
    metrics: roundAll(r.metrics),
    benchmarks: r.benchmarks.map((b) => ({ indexId: b.indexId, ...roundAll(b.metrics) })),
    events: { replayed: r.replayed, detected: r.eventCounts, alerts: r.alerts, parked: r.parked },
    fills: {
      count: r.fills.length,
      hash: r.fillsHash,
      list: r.fills.map((f) => ({ at: iso(f.at), instrument: f.instrument, side: f.side, quantity: num(f.quantity), price: num(f.price), feeUsd: num(f.feeUsd), eventId: f.eventId })),
    },
    /** `[time, equity, drawdown, exposure]` at each replayed time. */
    equity: r.equity.map((p, i) => [p.t, num(p.value), num(dd[i]!.value), num(p.exposure)]),
  };
}

export type BacktestReport = ReturnType<typeof buildReport>;

export function reportJson(report: BacktestReport): string {
  return `${JSON.stringify(report, null, 1)}\n`;
}

export const pct = (x: number | null | undefined) => (x === null || x === undefined ? '—' : `${(x * 100).toFixed(2)}%`);
export const fixed = (x: number | null | undefined, d = 2) => (x === null || x === undefined ? '—' : x.toFixed(d));
const days = (ms: number | null | undefined) => (ms === null || ms === undefined ? '—' : `${(ms / 86_400_000).toFixed(1)} d`);

type Row = [label: string, strategy: string, benchmark: (m: ReturnMetrics) => string];

function metricRows(m: StrategyMetrics | ReturnType<typeof roundAll<StrategyMetrics>>): Row[] {
  return [
    ['total return', pct(m.totalReturn), (b) => pct(b.totalReturn)],
    ['CAGR', pct(m.cagr), (b) => pct(b.cagr)],
    ['volatility (ann.)', pct(m.volatility), (b) => pct(b.volatility)],
    ['Sharpe', fixed(m.sharpe), (b) => fixed(b.sharpe)],
    ['Sortino', fixed(m.sortino), (b) => fixed(b.sortino)],
    ['max drawdown', pct(m.maxDrawdown), (b) => pct(b.maxDrawdown)],
    ['max drawdown duration', days(m.maxDrawdownDurationMs), (b) => days(b.maxDrawdownDurationMs)],
    ['trades', String(m.trades), () => ''],
    ['win rate', pct(m.winRate), () => ''],
    ['turnover', `${fixed(m.turnover)}x`, () => ''],
    ['fees paid', `${fixed(m.feesPaid)} USD`, () => ''],
    ['exposure', pct(m.exposure), () => ''],
  ];
}

/** A plain table: the strategy next to buy-and-hold of each index. */
export function renderTable(report: BacktestReport): string {
  const benches = report.benchmarks;
  const head = ['', report.strategy.name, ...benches.map((b) => `hold ${b.indexId}`)];
  const rows = metricRows(report.metrics as never).map(([label, s, b]) => [label, s, ...benches.map((x) => b(x as never))]);
  const lines = [
    `${report.strategy.name} ${report.settings.from!.slice(0, 10)} .. ${report.settings.to!.slice(0, 10)} (${report.settings.interval}), run ${report.runId}, fills ${report.fills.hash.slice(0, 12)}`,
    formatTable([head, ...rows]),
  ];
  const gaps = report.coverage.flatMap((c) => c.gaps.map((g) => `${c.indexId} ${g.from} .. ${g.to}`));
  if (gaps.length > 0) lines.push(`gaps in the history: ${gaps.join('; ')}`);
  if (report.events.parked.count > 0) lines.push(`warning: ${report.events.parked.count} event(s) failed in the strategy and were skipped: ${report.events.parked.errors.join('; ')}`);
  return `${lines.join('\n')}\n`;
}

export function formatTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** At most `max` points, evenly picked, the last one kept. */
function thin<T>(points: readonly T[], max: number): T[] {
  if (points.length <= max) return [...points];
  const stride = points.length / max;
  const out = Array.from({ length: max - 1 }, (_, i) => points[Math.floor(i * stride)]!);
  out.push(points[points.length - 1]!);
  return out;
}

interface Series {
  name: string;
  color: string;
  points: [number, number][];
}

function svgChart(id: string, title: string, series: Series[], format: (v: number) => string, fill = false): string {
  const W = 960;
  const H = 280;
  const pad = { l: 70, r: 16, t: 28, b: 28 };
  const all = series.flatMap((s) => s.points);
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]));
  let lo = Math.min(...all.map((p) => p[1]));
  let hi = Math.max(...all.map((p) => p[1]));
  if (fill) hi = Math.max(hi, 0);
  if (hi === lo) [lo, hi] = [lo - 1, hi + 1];
  const x = (t: number) => pad.l + ((t - t0) / (t1 - t0 || 1)) * (W - pad.l - pad.r);
  const y = (v: number) => pad.t + ((hi - v) / (hi - lo)) * (H - pad.t - pad.b);
  const paths = series.map((s) => {
    const d = s.points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join('');
    const area = fill ? `${d}L${x(s.points[s.points.length - 1]![0]).toFixed(1)},${y(0).toFixed(1)}L${x(s.points[0]![0]).toFixed(1)},${y(0).toFixed(1)}Z` : d;
    return `<path class="series" d="${area}" fill="${fill ? s.color : 'none'}" fill-opacity="${fill ? 0.35 : 0}" stroke="${s.color}" stroke-width="1.5"><title>${escapeHtml(s.name)}</title></path>`;
  });
  const ticks = [hi, (hi + lo) / 2, lo].map(
    (v) => `<text x="${pad.l - 6}" y="${y(v) + 4}" text-anchor="end">${escapeHtml(format(v))}</text><line x1="${pad.l}" x2="${W - pad.r}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
  );
  const dates = [t0, t1].map((t, i) => `<text x="${i === 0 ? pad.l : W - pad.r}" y="${H - 8}" text-anchor="${i === 0 ? 'start' : 'end'}">${new Date(t).toISOString().slice(0, 10)}</text>`);
  const legend = series.map((s, i) => `<text x="${pad.l + i * 170}" y="16" fill="${s.color}">■ ${escapeHtml(s.name)}</text>`);
  return `<figure><figcaption>${escapeHtml(title)}</figcaption><svg id="${id}" viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="${escapeHtml(title)}">${ticks.join('')}${paths.join('')}${dates.join('')}${legend.join('')}</svg></figure>`;
}

const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

/** One HTML file with everything inline (no script, no network): opens from disk in any browser. */
export function renderHtml(report: BacktestReport, benchmarkCurves: { indexId: string; points: [number, number][] }[]): string {
  const equity = thin(report.equity, 1500);
  const cash = report.settings.cash;
  const strategy: Series = { name: report.strategy.name, color: COLORS[0]!, points: equity.map((p) => [p[0] as number, p[1] as number]) };
  const benches: Series[] = benchmarkCurves.map((b, i) => {
    const base = b.points[0]?.[1] ?? 1;
    return { name: `hold ${b.indexId}`, color: COLORS[(i + 1) % COLORS.length]!, points: thin(b.points, 1500).map(([t, v]) => [t, (v / base) * cash] as [number, number]) };
  });
  const dd: Series = { name: 'drawdown', color: '#d62728', points: equity.map((p) => [p[0] as number, p[2] as number]) };
  const head = ['', escapeHtml(report.strategy.name), ...report.benchmarks.map((b) => `hold ${escapeHtml(b.indexId)}`)];
  const rows = metricRows(report.metrics as never).map(([label, s, b]) => [label, s, ...report.benchmarks.map((x) => b(x as never))]);
  const table = `<table><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c, i) => (i === 0 ? `<th>${escapeHtml(c)}</th>` : `<td>${escapeHtml(c)}</td>`)).join('')}</tr>`).join('')}</tbody></table>`;
  const gaps = report.coverage.flatMap((c) => c.gaps.map((g) => `${c.indexId}: ${g.from} .. ${g.to}`));
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Backtest ${escapeHtml(report.strategy.name)} ${escapeHtml(report.runId)}</title>
<style>body{font:14px system-ui,sans-serif;margin:24px;max-width:1000px;color:#222}svg text{font-size:11px;fill:#444}table{border-collapse:collapse}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #eee}th:first-child{text-align:left}figcaption{font-weight:600;margin:12px 0 4px}code{background:#f4f4f4;padding:1px 4px}</style>
</head><body>
<h1>Backtest: ${escapeHtml(report.strategy.name)}</h1>
<p>${escapeHtml(report.settings.from!)} .. ${escapeHtml(report.settings.to!)} (${report.settings.interval}), indexes ${escapeHtml(report.settings.indexes.join(', '))}, cash ${cash} USD, fee ${report.settings.feeBps} bps, slippage ${report.settings.slippageBps} bps.<br>
Params <code>${escapeHtml(JSON.stringify(report.strategy.params))}</code>, run <code>${report.runId}</code>, ${report.fills.count} fills (hash <code>${report.fills.hash.slice(0, 16)}</code>).</p>
${svgChart('equity-chart', 'Equity (USD), with buy-and-hold of each index from the same cash', [strategy, ...benches], (v) => v.toFixed(0))}
${svgChart('drawdown-chart', 'Drawdown from the running peak', [dd], (v) => `${(v * 100).toFixed(1)}%`, true)}
<h2>Figures</h2>
${table}
<p>${gaps.length === 0 ? 'No gaps in the cached history.' : `Gaps in the cached history: ${escapeHtml(gaps.join('; '))}`}</p>
</body></html>
`;
}
