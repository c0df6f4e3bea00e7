import type { PaperFill } from '../store/index.ts';

/**
 * Performance figures of an equity curve and its fills. Pure: the same inputs give the
 * same numbers, bit for bit. The curves are daily closes (see `BacktestResult.equity`): returns
 * are taken between consecutive points and annualised over 365 days, because crypto trades
 * every day.
 */

export const DAY_MS = 86_400_000;
const YEAR_DAYS = 365;

export interface ValuePoint {
  t: number;
  value: number;
}

export interface EquityPoint extends ValuePoint {
  /** Value of open positions over equity, in [0, 1] for a long-only book. */
  exposure: number;
}

/** A fill as the metrics read it: the paper broker's, without its bookkeeping ids. */
export type TradeFill = Omit<PaperFill, 'id' | 'account' | 'eventId'>;

export interface ReturnMetrics {
  start: number;
  end: number;
  totalReturn: number;
  /** Undefined for a period under a day. */
  cagr: number | null;
  /** Annualised standard deviation of daily returns; null with fewer than two. */
  volatility: number | null;
  sharpe: number | null;
  sortino: number | null;
  /** Worst fall from a peak, as a fraction <= 0. */
  maxDrawdown: number;
  /** Longest time under a previous peak (to recovery, or to the end if none), ms. */
  maxDrawdownDurationMs: number;
}

export interface StrategyMetrics extends ReturnMetrics {
  /** Fills. */
  trades: number;
  /** Sells that closed (part of) a position. */
  closedTrades: number;
  /** Share of closed trades that made money after fees; null with none. */
  winRate: number | null;
  /** Traded notional over average equity. */
  turnover: number;
  feesPaid: number;
  /** Time-weighted average of exposure. */
  exposure: number;
}

/** The last value of each UTC day, in order. */
export function dailyCloses(curve: readonly ValuePoint[]): ValuePoint[] {
  const out: ValuePoint[] = [];
  for (const p of curve) {
    const last = out[out.length - 1];
    if (last && Math.floor(last.t / DAY_MS) === Math.floor(p.t / DAY_MS)) out[out.length - 1] = p;
    else out.push(p);
  }
  return out;
}

/** Fraction below the running peak at each point (0 at a new high). */
export function drawdowns(curve: readonly ValuePoint[]): ValuePoint[] {
  let peak = -Infinity;
  return curve.map((p) => {
    peak = Math.max(peak, p.value);
    return { t: p.t, value: peak > 0 ? p.value / peak - 1 : 0 };
  });
}

export function returnMetrics(curve: readonly ValuePoint[]): ReturnMetrics {
  if (curve.length === 0) throw new RangeError('Expected a curve with at least one point, got none');
  const start = curve[0]!.value;
  const end = curve[curve.length - 1]!.value;
  const spanDays = (curve[curve.length - 1]!.t - curve[0]!.t) / DAY_MS;
  const totalReturn = start > 0 ? end / start - 1 : 0;
  // The curve is already daily closes (the replay keeps no finer series): each step is a day's
  // return, and the drawdown below is taken on the same points.
  const daily: number[] = [];
  for (let i = 1; i < curve.length; i++) daily.push(curve[i - 1]!.value > 0 ? curve[i]!.value / curve[i - 1]!.value - 1 : 0);
  const mean = daily.reduce((a, b) => a + b, 0) / (daily.length || 1);
  const sd = daily.length > 1 ? Math.sqrt(daily.reduce((a, r) => a + (r - mean) ** 2, 0) / (daily.length - 1)) : null;
  const downside = daily.length > 1 ? Math.sqrt(daily.reduce((a, r) => a + Math.min(r, 0) ** 2, 0) / daily.length) : null;
  const dd = drawdowns(curve);
  let maxDrawdown = 0;
  let maxDrawdownDurationMs = 0;
  let underSince: number | undefined;
  for (const p of dd) {
    maxDrawdown = Math.min(maxDrawdown, p.value);
    if (p.value < 0) underSince ??= p.t;
    else if (underSince !== undefined) {
      maxDrawdownDurationMs = Math.max(maxDrawdownDurationMs, p.t - underSince);
      underSince = undefined;
    }
  }
  if (underSince !== undefined) maxDrawdownDurationMs = Math.max(maxDrawdownDurationMs, curve[curve.length - 1]!.t - underSince);
  return {
    start,
    end,
    totalReturn,
    cagr: spanDays >= 1 && start > 0 && end > 0 ? (end / start) ** (YEAR_DAYS / spanDays) - 1 : null,
    volatility: sd === null ? null : sd * Math.sqrt(YEAR_DAYS),
    sharpe: sd === null || sd === 0 ? null : (mean / sd) * Math.sqrt(YEAR_DAYS),
    sortino: downside === null || downside === 0 ? null : (mean / downside) * Math.sqrt(YEAR_DAYS),
    maxDrawdown,
    maxDrawdownDurationMs,
  };
}

export function strategyMetrics(curve: readonly EquityPoint[], fills: readonly TradeFill[]): StrategyMetrics {
  const base = returnMetrics(curve);
  // Average cost per instrument (fees included, as the paper broker books them) decides a win.
  const held = new Map<string, { quantity: number; cost: number }>();
  let closedTrades = 0;
  let wins = 0;
  let notional = 0;
  let feesPaid = 0;
  for (const f of fills) {
    notional += f.quantity * f.price;
    feesPaid += f.feeUsd;
    const h = held.get(f.instrument) ?? { quantity: 0, cost: 0 };
    if (f.side === 'buy') {
      held.set(f.instrument, { quantity: h.quantity + f.quantity, cost: h.cost + f.quantity * f.price + f.feeUsd });
      continue;
    }
    const sold = Math.min(f.quantity, h.quantity);
    const costOfSold = h.quantity > 0 ? (h.cost * sold) / h.quantity : 0;
    closedTrades++;
    if (f.quantity * f.price - f.feeUsd > costOfSold) wins++;
    held.set(f.instrument, { quantity: h.quantity - sold, cost: h.cost - costOfSold });
  }
  let weighted = 0;
  let span = 0;
  let equitySum = 0;
  for (let i = 0; i < curve.length; i++) {
    equitySum += curve[i]!.value;
    if (i + 1 < curve.length) {
      const dt = curve[i + 1]!.t - curve[i]!.t;
      weighted += curve[i]!.exposure * dt;
      span += dt;
    }
  }
  const averageEquity = equitySum / curve.length;
  return {
    ...base,
    trades: fills.length,
    closedTrades,
    winRate: closedTrades === 0 ? null : wins / closedTrades,
    turnover: averageEquity > 0 ? notional / averageEquity : 0,
    feesPaid,
    exposure: span > 0 ? weighted / span : (curve[0]?.exposure ?? 0),
  };
}
