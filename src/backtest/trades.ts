import type { RejectCode } from '../strategy/index.ts';
import type { TradeFill } from './metrics.ts';

/**
 * What the fills say about trading, as the paper broker books it: average cost per
 * instrument, buy fees in the cost, the sale fee out of the proceeds.
 */

export interface TradeRow extends TradeFill {
  /** A sale's proceeds after its fee, less the average cost of the units sold; null for a buy. */
  realisedPnl: number | null;
  /** A sale's time since the quantity-weighted average buy time of the units held; null for a buy. */
  holdingMs: number | null;
}

export interface TradeStats {
  /** Sales (each closes all or part of a position). */
  closedTrades: number;
  /** Share of sales with a realised P&L above 0; null with none. */
  winRate: number | null;
  /** Gross realised profit over gross realised loss; null without a losing sale. */
  profitFactor: number | null;
  /** Mean realised P&L per sale, USD; null with none. */
  expectancy: number | null;
  /** Mean realised P&L of the winning sales, USD. */
  averageWin: number | null;
  /** Mean realised P&L of the losing sales (P&L <= 0), USD. */
  averageLoss: number | null;
  bestTrade: number | null;
  worstTrade: number | null;
  /** Most losing sales in a row. */
  longestLosingStreak: number;
}

export interface OpenPosition {
  instrument: string;
  quantity: number;
  costUsd: number;
  /** Last known price; null if none (then valued at cost). */
  price: number | null;
}

export interface InstrumentPnl {
  instrument: string;
  buys: number;
  sells: number;
  feesUsd: number;
  realisedPnl: number;
  /** Open quantity at its last price less its cost; 0 when flat or unpriced. */
  unrealisedPnl: number;
  totalPnl: number;
}

/** Field by field, not a spread: see the backtest's fills. */
function tradeRow(f: TradeFill, realisedPnl: number | null, holdingMs: number | null): TradeRow {
  return { instrument: f.instrument, side: f.side, quantity: f.quantity, price: f.price, feeUsd: f.feeUsd, at: f.at, realisedPnl, holdingMs };
}

/**
 * The trade ledger one fill at a time: average cost per instrument and running figures, and
 * nothing kept per fill, so the figures of a run cost the same memory whatever it traded.
 */
export class TradeBook {
  private readonly held = new Map<string, { quantity: number; cost: number; since: number }>();
  private closed = 0;
  private pnlSum = 0;
  private wins = 0;
  private winSum = 0;
  private losses = 0;
  private lossSum = 0;
  private best = Number.NEGATIVE_INFINITY;
  private worst = Number.POSITIVE_INFINITY;
  private streak = 0;
  private longest = 0;
  private booked = 0;
  private notionalSum = 0;
  private feeSum = 0;

  /** Books a fill (in time order) and says what it realised. */
  add(f: TradeFill): TradeRow {
    this.booked++;
    this.notionalSum += f.quantity * f.price;
    this.feeSum += f.feeUsd;
    const h = this.held.get(f.instrument) ?? { quantity: 0, cost: 0, since: f.at };
    if (f.side === 'buy') {
      const quantity = h.quantity + f.quantity;
      this.held.set(f.instrument, { quantity, cost: h.cost + f.quantity * f.price + f.feeUsd, since: (h.since * h.quantity + f.at * f.quantity) / quantity });
      return tradeRow(f, null, null);
    }
    const sold = Math.min(f.quantity, h.quantity);
    const costOfSold = h.quantity > 0 ? (h.cost * sold) / h.quantity : 0;
    const pnl = f.quantity * f.price - f.feeUsd - costOfSold;
    this.held.set(f.instrument, { quantity: h.quantity - sold, cost: h.cost - costOfSold, since: h.since });
    this.closed++;
    this.pnlSum += pnl;
    if (pnl > 0) {
      this.wins++;
      this.winSum += pnl;
    } else {
      this.losses++;
      this.lossSum += pnl;
    }
    this.best = Math.max(this.best, pnl);
    this.worst = Math.min(this.worst, pnl);
    this.streak = pnl <= 0 ? this.streak + 1 : 0;
    this.longest = Math.max(this.longest, this.streak);
    return tradeRow(f, pnl, h.quantity > 0 ? f.at - h.since : null);
  }

  /** Fills booked. */
  get trades(): number {
    return this.booked;
  }

  /** The fills' quantity times price, summed, USD. */
  get notional(): number {
    return this.notionalSum;
  }

  get feesPaid(): number {
    return this.feeSum;
  }

  stats(): TradeStats {
    const mean = (sum: number, count: number) => (count === 0 ? null : sum / count);
    const grossLoss = -this.lossSum;
    return {
      closedTrades: this.closed,
      winRate: this.closed === 0 ? null : this.wins / this.closed,
      profitFactor: grossLoss > 0 ? this.winSum / grossLoss : null,
      expectancy: mean(this.pnlSum, this.closed),
      averageWin: mean(this.winSum, this.wins),
      averageLoss: mean(this.lossSum, this.losses),
      bestTrade: this.closed === 0 ? null : this.best,
      worstTrade: this.closed === 0 ? null : this.worst,
      longestLosingStreak: this.longest,
    };
  }
}

/** P&L per instrument, realised and on what is still held; their sum is the change in equity. */
export function instrumentPnl(rows: Iterable<TradeRow>, open: readonly OpenPosition[]): InstrumentPnl[] {
  const by = new Map<string, InstrumentPnl>();
  const entry = (instrument: string) => {
    let e = by.get(instrument);
    if (!e) by.set(instrument, (e = { instrument, buys: 0, sells: 0, feesUsd: 0, realisedPnl: 0, unrealisedPnl: 0, totalPnl: 0 }));
    return e;
  };
  for (const r of rows) {
    const e = entry(r.instrument);
    if (r.side === 'buy') e.buys++;
    else e.sells++;
    e.feesUsd += r.feeUsd;
    e.realisedPnl += r.realisedPnl ?? 0;
  }
  for (const p of open) entry(p.instrument).unrealisedPnl = p.price === null ? 0 : p.quantity * p.price - p.costUsd;
  for (const e of by.values()) e.totalPnl = e.realisedPnl + e.unrealisedPnl;
  return [...by.values()].sort((a, b) => a.totalPnl - b.totalPnl || a.instrument.localeCompare(b.instrument));
}

export interface RejectionSummary {
  code: RejectCode;
  count: number;
  /** Distinct instruments, in order of first refusal. */
  instruments: string[];
  /** The first refusal's message. */
  example: string;
}

/** Refused orders counted by reason, most frequent first. */
export function rejectionSummary(rejections: readonly { code: RejectCode; instrument: string; reason: string }[]): RejectionSummary[] {
  const by = new Map<RejectCode, RejectionSummary>();
  for (const r of rejections) {
    const s = by.get(r.code) ?? { code: r.code, count: 0, instruments: [], example: r.reason };
    s.count++;
    if (!s.instruments.includes(r.instrument)) s.instruments.push(r.instrument);
    by.set(r.code, s);
  }
  return [...by.values()].sort((a, b) => b.count - a.count || a.code.localeCompare(b.code));
}
