import { fewNames } from '../core/index.ts';
import { relative } from 'node:path';
import { DAY_MS, METRIC_CONVENTIONS, asPoints, dailySeries, drawdownPeriods, drawdowns, monthlyReturns, relativeMetrics, shortWindowWarning } from './metrics.ts';
import { INTERVAL_MS } from '../contract/index.ts';
import { type BacktestResult, isLargeGap } from './replay.ts';
import { FillLedger, carriedLedger } from './fill-ledger.ts';
import { carriedBy, withLazyList } from './lazy-list.ts';
import { DailyCurve } from './series.ts';
import { type TradeRow, instrumentPnl, rejectionSummary } from './trades.ts';

export const REPORT_FORMAT = 'indexbot-backtest/2';
const H = 3_600_000;

/** Twelve significant digits: enough for any figure, and the same bytes on every run. */
export const num = (x: number | null): number | null => (x === null || !Number.isFinite(x) ? null : Number(x.toPrecision(12)));
const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

function roundAll<T extends object>(m: T): { [K in keyof T]: T[K] extends number ? number | null : T[K] } {
  return Object.fromEntries(Object.entries(m).map(([k, v]) => [k, typeof v === 'number' ? num(v) : v])) as never;
}

/**
 * What `report.json` holds. Nothing in it depends on the machine, the wall clock or the run
 * order: the same cache, strategy file and params give the same bytes, and `fills.hash`
 * tells at a glance whether two runs traded alike. Every series in it is the daily series
 * the metrics use (see `conventions`).
 */
export function buildReport(r: BacktestResult) {
  const equity = dailySeries(r.equity);
  const dd = drawdowns(equity);
  const ledger = carriedLedger(r, 'fills') ?? FillLedger.of(r.fills);
  // A run's own curves are daily already (DailyCloses); a list given or edited is made so.
  const navs = r.navs.map((n) => ({ indexId: n.indexId, curve: carriedCurve(n, 'points') ?? DailyCurve.daily(asPoints(n.points)) }));
  const warnings: string[] = [];
  const short = shortWindowWarning(r.metrics.days);
  if (short) warnings.push(short);
  const narrowed = narrowedRange(r);
  if (narrowed) warnings.push(narrowed);
  const settings = { ...r.settings, from: iso(r.settings.from), to: iso(r.settings.to), requested: r.requested && { from: iso(r.requested.from), to: iso(r.requested.to) } };
  const coverage = r.coverage.map((c) => ({ indexId: c.indexId, points: c.points, first: iso(c.first), last: iso(c.last), gaps: c.gaps.map((g) => ({ from: iso(g.from), to: iso(g.to) })) }));
  const holes = allowedHoles(r.settings, gapsInRun({ settings, coverage }));
  if (holes) warnings.push(holes);
  if (r.parked.count > 0) {
    warnings.push(`${r.parked.count} event(s) failed in the strategy and were skipped: the figures miss what its handlers would have done (first: ${r.parked.errors[0]?.split('\n')[0]})`);
  }
  if (r.rejections.length > 0) warnings.push(`${r.rejections.length} order(s) were refused by the paper broker (see rejections)`);
  return {
    format: REPORT_FORMAT,
    runId: r.runId,
    strategy: { name: r.strategy.name, file: relative(process.cwd(), r.strategy.file), sourceHash: r.strategy.sourceHash, params: r.strategy.params },
    settings,
    coverage,
    conventions: METRIC_CONVENTIONS,
    warnings,
    metrics: roundAll(r.metrics),
    benchmarks: r.benchmarks.map((b) => ({
      indexId: b.indexId,
      ...roundAll(b.metrics),
      /** The strategy against this index. */
      relative: roundAll(relativeMetrics(equity, navs.find((n) => n.indexId === b.indexId)?.curve.points() ?? [])),
    })),
    events: { replayed: r.replayed, detected: r.eventCounts, alerts: r.alerts, parked: r.parked },
    fills: withLazyList(
      {
        count: ledger.length,
        hash: r.fillsHash,
        /** The trade list: every fill, and for a sale its realised P&L and holding time. */
        list: [] as ReportFillRow[],
      },
      'list',
      ledger,
      () => Array.from(ledger.rows(), reportFillRow),
    ),
    instruments: instrumentPnl(ledger.rows(), r.openPositions).map((x) => roundAll(x)),
    /** Each instrument key above as people read it: a token's symbol, an index's id. */
    labels: r.labels,
    /** What the strategy raised with `ctx.alert`: every one counted, the first ones listed (a backtest has no sinks). */
    alerts: { count: r.alerts, list: r.alertList.map((a) => ({ at: iso(a.at), message: a.message, data: a.data ?? null, eventId: a.eventId })) },
    rejections: {
      count: r.rejections.length,
      byReason: rejectionSummary(r.rejections),
      list: r.rejections.map((x) => ({ at: iso(x.at), instrument: x.instrument, side: x.side, code: x.code, reason: x.reason, eventId: x.eventId })),
    },
    openPositions: r.openPositions.map((p) => ({
      instrument: p.instrument,
      quantity: num(p.quantity),
      costUsd: num(p.costUsd),
      price: num(p.price),
      valueUsd: num(p.price === null ? null : p.price * p.quantity),
      unrealisedPnl: num(p.price === null ? null : p.price * p.quantity - p.costUsd),
    })),
    monthlyReturns: monthlyReturns(equity).map((m) => ({ month: m.month, return: num(m.return) })),
    /** The five deepest falls from a peak. */
    drawdowns: drawdownPeriods(equity)
      .slice(0, 5)
      .map((p) => ({ start: iso(p.start), trough: iso(p.trough), recovery: iso(p.recovery), depth: num(p.depth), days: num(p.lengthMs / DAY_MS) })),
    /** `[time, equity, drawdown, exposure]` on the daily series. */
    equity: equity.map((p, i) => [p.t, num(p.value), num(dd[i]!.value), num(p.exposure)]),
    /** Each index's value on its daily series: the buy-and-hold benchmarks. */
    benchmarkCurves: navs.map(({ indexId, curve }) => withLazyList({ indexId, points: [] as (number | null)[][] }, 'points', curve, () => curve.pairs(num))),
  };
}

/** The columns behind a curve's `points` while the list was never read nor set. */
const carriedCurve = (holder: object, key: string) => carriedBy(holder, key, DailyCurve);

/** A fill as report.json lists it. */
function reportFillRow(f: TradeRow & { eventId: string }) {
  return {
    at: iso(f.at),
    instrument: f.instrument,
    side: f.side,
    quantity: num(f.quantity),
    price: num(f.price),
    feeUsd: num(f.feeUsd),
    realisedPnl: num(f.realisedPnl),
    holdingHours: f.holdingMs === null ? null : num(f.holdingMs / H),
    eventId: f.eventId,
  };
}

export type ReportFillRow = ReturnType<typeof reportFillRow>;

/** The sales among a report's fills, counted without making its list. */
export function reportSales(fills: BacktestReport['fills']): number {
  const ledger = carriedLedger(fills, 'list');
  if (ledger !== undefined) return ledger.book.stats().closedTrades;
  let sales = 0;
  for (const f of fills.list) if (f.side === 'sell') sales++;
  return sales;
}

/**
 * A report's fills from `start` (from the end when negative, as `slice` counts), one at a
 * time: a report built by a run makes its list's rows as they are read, and the table, the
 * page and report.json read them so without making the list.
 */
export function* reportFillRows(fills: BacktestReport['fills'], start = 0): Generator<ReportFillRow, void, undefined> {
  const ledger = carriedLedger(fills, 'list');
  if (ledger === undefined) {
    yield* fills.list.slice(start);
    return;
  }
  for (const row of ledger.rows(start)) yield reportFillRow(row);
}

/** A report's buy-and-hold curves, each as report.json lists it: a report built by a run makes each row's points as it is read, and drops them after. */
export function* benchmarkCurveRows(curves: BacktestReport['benchmarkCurves']): Generator<BacktestReport['benchmarkCurves'][number], void, undefined> {
  for (const c of curves) {
    const curve = carriedCurve(c, 'points');
    // An entry given other keys is written as it stands, as JSON.stringify would.
    const asMade = curve !== undefined && Object.keys(c).join() === 'indexId,points';
    yield asMade ? { indexId: c.indexId, points: curve.pairs(num) } : c;
  }
}

/** The start of the warning of holes run past inside the range. */
export const HOLES_PREFIX = 'the cached history has ';

/** The start of the warning of a run narrowed to the cached part of the range asked for. */
export const NARROWED_PREFIX = 'the cache holds ';

function narrowedRange(r: Pick<BacktestResult, 'settings' | 'requested'>): string | null {
  if (!r.requested) return null;
  const at = (t: number) => new Date(t).toISOString().slice(0, 16);
  return `${NARROWED_PREFIX}${at(r.settings.from)} .. ${at(r.settings.to)} of the requested ${at(r.requested.from)} .. ${at(r.requested.to)}: the strategy and buy-and-hold figures cover ${at(r.settings.from)} .. ${at(r.settings.to)} only`;
}

/**
 * The warning of holes longer than a run accepts by default inside the range it replayed,
 * run past with `allowGaps` (trial 34: a 29-day hole showed only in the gap list at the
 * bottom, while the curves went flat across it), each judged by its part inside the run, a
 * hole several indexes share once ({@link gapsInRun}). Those at the ends are the narrowing's.
 */
function allowedHoles(s: BacktestResult['settings'], inRun: ReturnType<typeof gapsInRun>): string | null {
  const step = INTERVAL_MS[s.interval];
  const long = inRun.filter((g) => isLargeGap({ from: Date.parse(g.from), to: Date.parse(g.to) }, step, s.maxGapMs));
  if (long.length === 0) return null;
  const first = long[0]!;
  return `${HOLES_PREFIX}${long.length} hole(s) longer than ${s.maxGapMs / H} h inside the range (first: ${first.from} .. ${first.to}, ${fewNames(first.indexIds)}), run past with --allow-gaps: across each, prices and values stay at their last point`;
}

export type BacktestReport = ReturnType<typeof buildReport>;

/**
 * A report without its lists of fills, refused orders and alerts, which grow with the run,
 * nor its buy-and-hold curves, the same in every run of a sweep (report.json keeps them all):
 * what a sweep's comparison reads of each run. 16 parsed reports of a 40-index, 4-year run
 * held 16 lists of 49,680 fills, and 16 copies of 58,400 points of curves.
 */
export type ReportSummary = Omit<BacktestReport, 'fills' | 'rejections' | 'alerts' | 'benchmarkCurves'> & {
  fills: Omit<BacktestReport['fills'], 'list'>;
  rejections: Omit<BacktestReport['rejections'], 'list'>;
  alerts: Omit<BacktestReport['alerts'], 'list'>;
};

export function reportSummary(report: BacktestReport): ReportSummary {
  const { benchmarkCurves: _sameInEveryRun, ...rest } = report;
  return { ...rest, fills: withoutList(report.fills), rejections: withoutList(report.rejections), alerts: withoutList(report.alerts) };
}

/** A copy of a report's list holder, keys in order, its list left out (or `list` in its place), the list itself not read: a fill list is made when read. */
function withoutList<T extends { list: unknown }>(holder: T, list?: unknown): Omit<T, 'list'> {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(holder)) {
    if (key !== 'list') copy[key] = holder[key as keyof T];
    else if (list !== undefined) copy[key] = list;
  }
  return copy as Omit<T, 'list'>;
}

/**
 * The gaps of the cached history inside the range the run replayed, each said once with the
 * indexes it holds for: a hole before or after every index's points is already the narrowing
 * warning, and one hour missing at the end of 40 indexes made a line of 40 entries.
 */
export function gapsInRun(report: Pick<BacktestReport, 'settings' | 'coverage'>): { from: string; to: string; indexIds: string[] }[] {
  const [from, to] = [report.settings.from!, report.settings.to!];
  const byRange = new Map<string, { from: string; to: string; indexIds: string[] }>();
  for (const c of report.coverage) {
    for (const g of c.gaps) {
      // ISO strings of one format order as the times do.
      if (g.to! < from || g.from! > to) continue;
      const gap = { from: g.from! < from ? from : g.from!, to: g.to! > to ? to : g.to! };
      const key = `${gap.from} ${gap.to}`;
      const entry = byRange.get(key) ?? { ...gap, indexIds: [] };
      entry.indexIds.push(c.indexId);
      byRange.set(key, entry);
    }
  }
  return [...byRange.values()].sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
}

/** A gap of {@link gapsInRun} in a line: its range and the indexes, the first few by name. */
export function gapText(gap: { from: string; to: string; indexIds: string[] }): string {
  return `${gap.from} .. ${gap.to} (${fewNames(gap.indexIds)})`;
}

/** An instrument key of the report as people read it (the key itself where the report names no label). */
export function labelOf(report: Pick<BacktestReport, 'labels'>, instrument: string): string {
  return report.labels[instrument] ?? instrument;
}

export function reportJson(report: BacktestReport): string {
  return [...reportJsonChunks(report)].join('');
}

/** The lists of a report that grow with the run: three with the trading, one with the indexes and days. */
const LISTS = ['fills', 'rejections', 'alerts', 'benchmarkCurves'] as const;
type ListName = (typeof LISTS)[number];
/** Where each list stands in the text around them: a NUL-marked name, which no other string of a report holds but by a strategy's own choice (then the whole text is made at once). */
const PLACE = /"\\u0000(fills|rejections|alerts|benchmarkCurves)\\u0000"/;

/**
 * report.json's text in pieces, the same bytes as `JSON.stringify(report, null, 1)` and a
 * newline: the lists that grow with the run (fills, refused orders, alerts, and the
 * buy-and-hold curves of every index) come a few hundred rows at a time, never as one string.
 * 49,680 fills made a 20 MB string, 40 indexes' curves over 4 years one of 2.6 MB.
 */
export function* reportJsonChunks(report: BacktestReport): Generator<string, void, undefined> {
  const mark = (name: ListName) => `\u0000${name}\u0000`;
  const placed = { ...report, benchmarkCurves: mark('benchmarkCurves') };
  for (const name of ['fills', 'rejections', 'alerts'] as const) Object.assign(placed, { [name]: withoutList(report[name], mark(name)) });
  // [text, name, text, name, ..., text]
  const parts = JSON.stringify(placed, null, 1).split(new RegExp(PLACE, 'g'));
  if (parts.length !== 2 * LISTS.length + 1 || new Set(parts.filter((_, i) => i % 2 === 1)).size !== LISTS.length || !Array.isArray(report.benchmarkCurves)) {
    yield `${JSON.stringify(report, null, 1)}\n`;
    return;
  }
  for (let i = 0; i + 1 < parts.length; i += 2) {
    yield parts[i]!;
    const name = parts[i + 1] as ListName;
    // The curves are a value one level in (report.benchmarkCurves), the others two (report.fills.list): their rows one level further.
    if (name === 'benchmarkCurves') yield* listChunks(benchmarkCurveRows(report.benchmarkCurves), 1);
    else yield* listChunks(name === 'fills' ? reportFillRows(report.fills) : report[name].list, 2);
  }
  yield `${parts.at(-1)}\n`;
}

const CHUNK_CHARS = 64 * 1024;

function* listChunks(list: Iterable<unknown>, depth: number): Generator<string, void, undefined> {
  const pad = ' '.repeat(depth + 1);
  let chunk = '[';
  let rows = 0;
  for (const row of list) {
    chunk += `${rows++ === 0 ? '' : ','}\n${pad}${JSON.stringify(row, null, 1).replaceAll('\n', `\n${pad}`)}`;
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = '';
    }
  }
  yield rows === 0 ? '[]' : `${chunk}\n${' '.repeat(depth)}]`;
}
