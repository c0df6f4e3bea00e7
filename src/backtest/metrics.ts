import type { Fill } from '../strategy/index.ts';
import { TradeBook, type TradeStats } from './trades.ts';

/**
 * Performance figures of an equity curve. Pure: the same inputs give the same numbers, bit
 * for bit. One convention for all of them, stated once in the report (METRIC_CONVENTIONS):
 * the curve is sampled at 00:00 UTC each day (the value as of the last point at or before
 * it), plus its first and last points; returns, volatility and drawdowns all come from that
 * daily series; a year is 365 days, because crypto trades every day; the risk-free rate is 0.
 */

export const DAY_MS = 86_400_000;
const YEAR_DAYS = 365;
/** A window shorter than this makes annualised figures (CAGR, Sharpe) mostly noise. */
export const SHORT_WINDOW_DAYS = 90;

/** The figures the short-window mark qualifies, as its warning names them: the run's table, a sweep's and walk-forward's mark these. */
export const ANNUALISED_METRICS: readonly string[] = ['cagr', 'sharpe'];

/** What qualifies the annualised figures of a span of `days`, if shorter than {@link SHORT_WINDOW_DAYS}: `subject` names the span. */
export function shortWindowWarning(days: number, subject = 'the window is'): string | null {
  return days < SHORT_WINDOW_DAYS ? `${subject} ${days.toFixed(1)} days, under ${SHORT_WINDOW_DAYS}: CAGR and Sharpe annualise it and say little` : null;
}

export const METRIC_CONVENTIONS =
  'Daily series: the value at each 00:00 UTC (as of the last replayed point at or before it), plus the first and last points. ' +
  'Returns, volatility, Sharpe, Sortino, drawdowns, alpha, beta and the information ratio all use that series. ' +
  'Annualised over 365 days; risk-free rate 0; Sortino divides by the root mean square of the negative returns over all days. ' +
  'Calmar is CAGR over the absolute maximum drawdown. A drawdown lasts from its peak to the first point back at that peak (or to the end). ' +
  "Realised P&L of a sale uses the average cost of the units held, buy fees included, minus the sale fee; holding time is from the units' quantity-weighted average buy time.";

export interface ValuePoint {
  t: number;
  value: number;
}

export interface EquityPoint extends ValuePoint {
  /** Value of open positions over equity, in [0, 1] for a long-only book. */
  exposure: number;
}

/** A fill as the metrics read it: the paper broker's, as numbers. */
export type TradeFill = Fill;

export interface ReturnMetrics {
  start: number;
  end: number;
  totalReturn: number;
  /** Null for a period under a day. */
  cagr: number | null;
  /** Annualised standard deviation of daily returns; null with fewer than two. */
  volatility: number | null;
  sharpe: number | null;
  sortino: number | null;
  /** Worst fall from a peak, as a fraction <= 0. */
  maxDrawdown: number;
  /** Longest time from a peak to its recovery (or to the end if none), ms. */
  maxDrawdownDurationMs: number;
  /** CAGR over |max drawdown|; null without a drawdown or a CAGR. */
  calmar: number | null;
  /** Days from the first point to the last. */
  days: number;
}

export interface StrategyMetrics extends ReturnMetrics, TradeStats {
  /** Fills. */
  trades: number;
  /** Traded notional over average equity. */
  turnover: number;
  feesPaid: number;
  /** Time-weighted average of exposure on the daily series (each day at its 00:00 UTC value): a position held within a day and closed before its end counts 0. */
  exposure: number;
}

/**
 * The daily series every metric uses: the first point, the value as of each 00:00 UTC after
 * it (stamped at that midnight), and the last point. Already-daily input comes back as is.
 */
export function dailySeries<P extends ValuePoint>(curve: readonly P[]): readonly P[] {
  // A backtest's curves are daily already, and each figure asks for the series again.
  if (isDaily(curve)) return curve;
  const out: P[] = [curve[0]!];
  const last = curve[curve.length - 1]!;
  let boundary = (Math.floor(curve[0]!.t / DAY_MS) + 1) * DAY_MS;
  let i = 0;
  while (boundary <= last.t) {
    while (i + 1 < curve.length && curve[i + 1]!.t <= boundary) i++;
    out.push({ ...curve[i]!, t: boundary });
    boundary += DAY_MS;
  }
  if (out[out.length - 1]!.t < last.t) out.push(last);
  return out;
}

/** `[t, value]` pairs, as a run keeps an index's daily closes, as points. */
export const asPoints = (points: readonly (readonly [number, number])[]): ValuePoint[] => points.map(([t, value]) => ({ t, value }));

/** The first point, then one at each 00:00 UTC after it without a miss, then at most one more, before the next 00:00. */
function isDaily(curve: readonly ValuePoint[]): boolean {
  if (curve.length === 0) return true;
  let boundary = (Math.floor(curve[0]!.t / DAY_MS) + 1) * DAY_MS;
  for (let i = 1; i < curve.length; i++, boundary += DAY_MS) {
    const t = curve[i]!.t;
    if (t === boundary) continue;
    return i === curve.length - 1 && t > curve[i - 1]!.t && t < boundary;
  }
  return true;
}

/** Fraction below the running peak at each point (0 at a new high). */
export function drawdowns(curve: readonly ValuePoint[]): ValuePoint[] {
  let peak = -Infinity;
  return curve.map((p) => {
    peak = Math.max(peak, p.value);
    return { t: p.t, value: peak > 0 ? p.value / peak - 1 : 0 };
  });
}

/** Simple returns between consecutive points. */
export function periodReturns(values: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 1; i < values.length; i++) out.push(values[i - 1]! > 0 ? values[i]! / values[i - 1]! - 1 : 0);
  return out;
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);
/** Sample standard deviation; null under two values. */
function stdev(xs: readonly number[]): number | null {
  if (xs.length < 2) return null;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, r) => a + (r - m) ** 2, 0) / (xs.length - 1));
}

export interface DrawdownPeriod {
  /** The peak the fall started from. */
  start: number;
  trough: number;
  /** First point back at the peak; null while still under it at the end. */
  recovery: number | null;
  /** Fraction <= 0. */
  depth: number;
  /** Peak to recovery, or to the last point. */
  lengthMs: number;
}

/** Every fall below a running peak on the curve, deepest first (ties: earliest first). */
export function drawdownPeriods(curve: readonly ValuePoint[]): DrawdownPeriod[] {
  const out: DrawdownPeriod[] = [];
  let peak: ValuePoint | undefined;
  let open: DrawdownPeriod | undefined;
  for (const p of curve) {
    if (peak === undefined || p.value >= peak.value) {
      if (open) {
        open.recovery = p.t;
        open.lengthMs = p.t - open.start;
        out.push(open);
        open = undefined;
      }
      peak = p;
      continue;
    }
    const depth = peak.value > 0 ? p.value / peak.value - 1 : 0;
    open ??= { start: peak.t, trough: p.t, recovery: null, depth, lengthMs: 0 };
    if (depth < open.depth) {
      open.depth = depth;
      open.trough = p.t;
    }
  }
  if (open) {
    open.lengthMs = curve[curve.length - 1]!.t - open.start;
    out.push(open);
  }
  return out.sort((a, b) => a.depth - b.depth || a.start - b.start);
}

export function returnMetrics(curve: readonly ValuePoint[]): ReturnMetrics {
  if (curve.length === 0) throw new RangeError('Expected a curve with at least one point, got none');
  const series = dailySeries(curve);
  const start = series[0]!.value;
  const end = series[series.length - 1]!.value;
  const days = (series[series.length - 1]!.t - series[0]!.t) / DAY_MS;
  const daily = periodReturns(series.map((p) => p.value));
  const m = mean(daily);
  const sd = stdev(daily);
  const downside = daily.length > 1 ? Math.sqrt(daily.reduce((a, r) => a + Math.min(r, 0) ** 2, 0) / daily.length) : null;
  const periods = drawdownPeriods(series);
  const maxDrawdown = periods[0]?.depth ?? 0;
  const cagr = days >= 1 && start > 0 && end > 0 ? (end / start) ** (YEAR_DAYS / days) - 1 : null;
  return {
    start,
    end,
    totalReturn: start > 0 ? end / start - 1 : 0,
    cagr,
    volatility: sd === null ? null : sd * Math.sqrt(YEAR_DAYS),
    sharpe: sd === null || sd === 0 ? null : (m / sd) * Math.sqrt(YEAR_DAYS),
    sortino: downside === null || downside === 0 ? null : (m / downside) * Math.sqrt(YEAR_DAYS),
    maxDrawdown,
    maxDrawdownDurationMs: Math.max(0, ...periods.map((p) => p.lengthMs)),
    calmar: cagr === null || maxDrawdown === 0 ? null : cagr / -maxDrawdown,
    days,
  };
}

export function strategyMetrics(curve: readonly EquityPoint[], fills: readonly TradeFill[]): StrategyMetrics {
  // The figures alone: a row per fill, as a report's table has, would double a long run's memory at its end.
  const book = new TradeBook();
  for (const f of fills) book.add(f);
  return strategyMetricsOf(curve, book);
}

/** {@link strategyMetrics} of fills already booked, as a run books them. */
export function strategyMetricsOf(curve: readonly EquityPoint[], book: TradeBook): StrategyMetrics {
  const base = returnMetrics(curve);
  const series = dailySeries(curve);
  let weighted = 0;
  let equitySum = 0;
  for (let i = 0; i < series.length; i++) {
    equitySum += series[i]!.value;
    if (i + 1 < series.length) weighted += series[i]!.exposure * (series[i + 1]!.t - series[i]!.t);
  }
  const span = series[series.length - 1]!.t - series[0]!.t;
  const averageEquity = equitySum / series.length;
  return {
    ...base,
    trades: book.trades,
    ...book.stats(),
    turnover: averageEquity > 0 ? book.notional / averageEquity : 0,
    feesPaid: book.feesPaid,
    exposure: span > 0 ? weighted / span : series[0]!.exposure,
  };
}

/** The value as of `t` (the last point at or before it; the first point before the curve starts). */
export function valueAsOf(curve: readonly ValuePoint[], t: number): number {
  let lo = 0;
  let hi = curve.length - 1;
  if (curve[0]!.t > t) return curve[0]!.value;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (curve[mid]!.t <= t) lo = mid;
    else hi = mid - 1;
  }
  return curve[lo]!.value;
}

export interface RelativeMetrics {
  /** Annualised: 365 x (mean daily return - beta x the benchmark's mean daily return). */
  alpha: number | null;
  /** Covariance of daily returns over the benchmark's variance. */
  beta: number | null;
  /** Annualised mean of the daily excess return over its standard deviation. */
  informationRatio: number | null;
}

/** The strategy against a benchmark, both sampled at the strategy's daily points. */
export function relativeMetrics(strategy: readonly ValuePoint[], benchmark: readonly ValuePoint[]): RelativeMetrics {
  const series = dailySeries(strategy);
  if (series.length < 3 || benchmark.length === 0) return { alpha: null, beta: null, informationRatio: null };
  const rs = periodReturns(series.map((p) => p.value));
  const rb = periodReturns(series.map((p) => valueAsOf(benchmark, p.t)));
  const ms = mean(rs);
  const mb = mean(rb);
  let cov = 0;
  let varB = 0;
  for (let i = 0; i < rs.length; i++) {
    cov += (rs[i]! - ms) * (rb[i]! - mb);
    varB += (rb[i]! - mb) ** 2;
  }
  const beta = varB === 0 ? null : cov / varB;
  const excess = rs.map((r, i) => r - rb[i]!);
  const te = stdev(excess);
  return {
    alpha: beta === null ? null : (ms - beta * mb) * YEAR_DAYS,
    beta,
    informationRatio: te === null || te === 0 ? null : (mean(excess) / te) * Math.sqrt(YEAR_DAYS),
  };
}

export interface MonthlyReturn {
  /** `2026-09` */
  month: string;
  return: number;
}

/** Each calendar month's return (UTC), from the value as of its first instant (or the first point) to its last (or the last point). */
export function monthlyReturns(curve: readonly ValuePoint[]): MonthlyReturn[] {
  const series = dailySeries(curve);
  if (series.length < 2) return [];
  const first = series[0]!.t;
  const last = series[series.length - 1]!.t;
  const out: MonthlyReturn[] = [];
  const d = new Date(first);
  let monthStart = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  while (monthStart < last) {
    const s = new Date(monthStart);
    const next = Date.UTC(s.getUTCFullYear(), s.getUTCMonth() + 1, 1);
    const a = valueAsOf(series, Math.max(first, monthStart));
    const b = valueAsOf(series, Math.min(last, next));
    out.push({ month: s.toISOString().slice(0, 7), return: a > 0 ? b / a - 1 : 0 });
    monthStart = next;
  }
  return out;
}
