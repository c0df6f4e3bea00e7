import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/core/index.ts';
import {
  DAY_MS,
  type EquityPoint,
  dailySeries,
  drawdownPeriods,
  drawdowns,
  instrumentPnl,
  monthlyReturns,
  rejectionSummary,
  relativeMetrics,
  returnMetrics,
  strategyMetrics,
  FillLedger,
  TradeBook,
  strategyMetricsOf,
} from '../../src/backtest/index.ts';

const T0 = Date.UTC(2025, 0, 1);
/** One value per day at midnight. */
const daily = (values: number[], exposure = 0): EquityPoint[] => values.map((value, i) => ({ t: T0 + i * DAY_MS, value, exposure }));

describe('returnMetrics on small series computed by hand', () => {
  it('a flat series: no return, no volatility, no drawdown, Sharpe undefined', () => {
    const m = returnMetrics(daily([100, 100, 100, 100]));
    expect(m.totalReturn).toBe(0);
    expect(m.cagr).toBe(0);
    expect(m.volatility).toBe(0);
    expect(m.sharpe).toBeNull();
    expect(m.sortino).toBeNull();
    expect(m.maxDrawdown).toBe(0);
    expect(m.maxDrawdownDurationMs).toBe(0);
  });

  it('a steady rise of 1 % a day', () => {
    const values = [100, 101, 102.01, 103.0301];
    const m = returnMetrics(daily(values));
    expect(m.totalReturn).toBeCloseTo(0.030301, 12);
    // 3 days of 1 %: CAGR = 1.01^365 - 1.
    expect(m.cagr).toBeCloseTo(1.01 ** 365 - 1, 6);
    expect(m.volatility).toBeCloseTo(0, 12);
    expect(m.maxDrawdown).toBe(0);
    // No down day: Sortino has no downside to divide by.
    expect(m.sortino).toBeNull();
  });

  it('a drawdown: 100 -> 120 -> 90 -> 110 -> 130', () => {
    const m = returnMetrics(daily([100, 120, 90, 110, 130]));
    expect(m.totalReturn).toBeCloseTo(0.3, 12);
    expect(m.maxDrawdown).toBeCloseTo(90 / 120 - 1, 12);
    // From the 120 peak on day 1 to the new high on day 4.
    expect(m.maxDrawdownDurationMs).toBe(3 * DAY_MS);
    expect(m.days).toBe(4);
    expect(m.calmar).toBeCloseTo((1.3 ** (365 / 4) - 1) / 0.25, 6);
    const r = [0.2, -0.25, 110 / 90 - 1, 130 / 110 - 1];
    const mean = r.reduce((a, b) => a + b) / 4;
    const sd = Math.sqrt(r.reduce((a, x) => a + (x - mean) ** 2, 0) / 3);
    const downside = Math.sqrt(0.25 ** 2 / 4);
    expect(m.volatility).toBeCloseTo(sd * Math.sqrt(365), 10);
    expect(m.sharpe).toBeCloseTo((mean / sd) * Math.sqrt(365), 10);
    expect(m.sortino).toBeCloseTo((mean / downside) * Math.sqrt(365), 10);
  });

  it('a drawdown never recovered lasts to the end', () => {
    const m = returnMetrics(daily([100, 80, 90]));
    expect(m.maxDrawdown).toBeCloseTo(-0.2, 12);
    expect(m.maxDrawdownDurationMs).toBe(2 * DAY_MS);
  });

  it('hourly points: the daily series is the first point, the value as of each 00:00 UTC, and the last point', () => {
    const hourly = Array.from({ length: 72 }, (_, h) => ({ t: T0 + h * 3_600_000, value: 100 + h }));
    const series = dailySeries(hourly);
    expect(series.map((c) => [c.t - T0, c.value])).toEqual([
      [0, 100],
      [DAY_MS, 124],
      [2 * DAY_MS, 148],
      [71 * 3_600_000, 171],
    ]);
    // Already daily: unchanged, and not copied (each figure of a report asks for it again).
    expect(dailySeries(series)).toBe(series);
    // Not daily: a point missing between two midnights, or two after the last one.
    const gap = [series[0]!, series[2]!, series[3]!];
    expect(dailySeries(gap).map((c) => [c.t - T0, c.value])).toEqual([
      [0, 100],
      [DAY_MS, 100],
      [2 * DAY_MS, 148],
      [71 * 3_600_000, 171],
    ]);
    const twoAfter = [...series.slice(0, 3), { t: T0 + 50 * 3_600_000, value: 150 }, series[3]!];
    expect(dailySeries(twoAfter)).toEqual(series);
    // The first return is measured from the first point: 100 -> 124.
    const m = returnMetrics(hourly);
    const r = [0.24, 148 / 124 - 1, 171 / 148 - 1];
    const mean = r.reduce((a, b) => a + b) / 3;
    const sd = Math.sqrt(r.reduce((a, x) => a + (x - mean) ** 2, 0) / 2);
    expect(m.sharpe).toBeCloseTo((mean / sd) * Math.sqrt(365), 10);
    expect(
      drawdowns([
        { t: 0, value: 10 },
        { t: 1, value: 5 },
        { t: 2, value: 20 },
      ]).map((d) => d.value),
    ).toEqual([0, -0.5, 0]);
  });

  it('measures drawdown on the same daily series as the returns: a dip between two midnights is not seen', () => {
    const hourly = Array.from({ length: 49 }, (_, h) => ({ t: T0 + h * 3_600_000, value: h === 30 ? 50 : 100 + (h >= 48 ? 1 : 0) }));
    const m = returnMetrics(hourly);
    expect(m.maxDrawdown).toBe(0);
    expect(m.volatility).toBeCloseTo(Math.sqrt(((0 - 0.005) ** 2 + (0.01 - 0.005) ** 2) / 1) * Math.sqrt(365), 12);
  });

  it('lists every drawdown with its peak, trough, recovery, depth and length, deepest first', () => {
    const p = drawdownPeriods(daily([100, 90, 100, 120, 60, 80, 130, 104]));
    expect(p.map((d) => [(d.start - T0) / DAY_MS, (d.trough - T0) / DAY_MS, d.recovery === null ? null : (d.recovery - T0) / DAY_MS, d.lengthMs / DAY_MS])).toEqual([
      [3, 4, 6, 3],
      [6, 7, null, 1],
      [0, 1, 2, 2],
    ]);
    expect(p.map((d) => d.depth)).toEqual([0.5 - 1, 104 / 130 - 1, 0.9 - 1]);
  });

  it('monthly returns run from the value as of each month start (or the first point) to the next month start (or the last point)', () => {
    const at = (y: number, m: number, d: number, value: number) => ({ t: Date.UTC(y, m, d), value });
    const m = monthlyReturns([at(2025, 0, 30, 100), at(2025, 1, 1, 110), at(2025, 2, 1, 99), at(2025, 2, 2, 108.9)]);
    expect(m.map((x) => x.month)).toEqual(['2025-01', '2025-02', '2025-03']);
    expect(m[0]!.return).toBeCloseTo(0.1, 12);
    expect(m[1]!.return).toBeCloseTo(-0.1, 12);
    expect(m[2]!.return).toBeCloseTo(0.1, 12);
  });
});

describe('relativeMetrics against a benchmark', () => {
  const bench = daily([100, 110, 99, 108.9, 98.01, 105]);
  const rb = [0.1, -0.1, 0.1, -0.1, 105 / 98.01 - 1];
  const fromReturns = (rs: number[]) => {
    const values = [100];
    for (const r of rs) values.push(values[values.length - 1]! * (1 + r));
    return daily(values);
  };

  it('twice the benchmark: beta 2, alpha 0, information ratio of the benchmark itself', () => {
    const m = relativeMetrics(fromReturns(rb.map((r) => 2 * r)), bench);
    expect(m.beta).toBeCloseTo(2, 10);
    expect(m.alpha).toBeCloseTo(0, 10);
    const mean = rb.reduce((a, b) => a + b) / rb.length;
    const sd = Math.sqrt(rb.reduce((a, x) => a + (x - mean) ** 2, 0) / (rb.length - 1));
    expect(m.informationRatio).toBeCloseTo((mean / sd) * Math.sqrt(365), 10);
  });

  it('half the benchmark plus 0.1 % a day: beta 0.5, alpha 36.5 % a year', () => {
    const m = relativeMetrics(fromReturns(rb.map((r) => 0.5 * r + 0.001)), bench);
    expect(m.beta).toBeCloseTo(0.5, 10);
    expect(m.alpha).toBeCloseTo(0.365, 10);
    const excess = rb.map((r) => -0.5 * r + 0.001);
    const mean = excess.reduce((a, b) => a + b) / excess.length;
    const sd = Math.sqrt(excess.reduce((a, x) => a + (x - mean) ** 2, 0) / (excess.length - 1));
    expect(m.informationRatio).toBeCloseTo((mean / sd) * Math.sqrt(365), 10);
  });

  it("samples an hourly benchmark at the strategy's daily points", () => {
    const hourly = bench.flatMap((p, i) => (i === 0 ? [p] : [{ t: p.t - 3_600_000, value: p.value * 5 }, p]));
    expect(relativeMetrics(fromReturns(rb.map((r) => 2 * r)), hourly).beta).toBeCloseTo(2, 10);
  });
});

describe('strategyMetrics', () => {
  it('a single winning trade: fees, turnover, win rate and exposure', () => {
    // Buy 10 at 100 (fee 1), hold for two of the four days, sell 10 at 110 (fee 1.1).
    const curve: EquityPoint[] = [
      { t: T0, value: 1000, exposure: 0 },
      { t: T0 + DAY_MS, value: 999, exposure: 1000 / 999 },
      { t: T0 + 2 * DAY_MS, value: 1099, exposure: 1100 / 1099 },
      { t: T0 + 3 * DAY_MS, value: 1097.9, exposure: 0 },
      { t: T0 + 4 * DAY_MS, value: 1097.9, exposure: 0 },
    ];
    const fills = [
      { instrument: 'index:x', side: 'buy' as const, quantity: 10, price: 100, feeUsd: 1, at: T0 + DAY_MS },
      { instrument: 'index:x', side: 'sell' as const, quantity: 10, price: 110, feeUsd: 1.1, at: T0 + 3 * DAY_MS },
    ];
    const m = strategyMetrics(curve, fills);
    expect(m.trades).toBe(2);
    expect(m.closedTrades).toBe(1);
    expect(m.winRate).toBe(1);
    expect(m.feesPaid).toBeCloseTo(2.1, 12);
    const averageEquity = (1000 + 999 + 1099 + 1097.9 + 1097.9) / 5;
    expect(m.turnover).toBeCloseTo((1000 + 1100) / averageEquity, 12);
    expect(m.exposure).toBeCloseTo((1000 / 999 + 1100 / 1099) / 4, 12);
    expect(m.totalReturn).toBeCloseTo(0.0979, 12);
  });

  it('a sell below the cost with fees is a loss; no sells means no win rate', () => {
    const curve = daily([1000, 1000]);
    const buy = { instrument: 'token:a', side: 'buy' as const, quantity: 1, price: 100, feeUsd: 1, at: T0 };
    expect(strategyMetrics(curve, [buy]).winRate).toBeNull();
    const sell = { instrument: 'token:a', side: 'sell' as const, quantity: 1, price: 100.5, feeUsd: 1, at: T0 + DAY_MS };
    expect(strategyMetrics(curve, [buy, sell]).winRate).toBe(0);
  });
});

describe('trade ledger', () => {
  const h = 3_600_000;
  const fill = (instrument: string, side: 'buy' | 'sell', quantity: number, price: number, feeUsd: number, hour: number) => ({ instrument, side, quantity, price, feeUsd, at: T0 + hour * h });
  const fills = [
    fill('token:A', 'buy', 10, 100, 1, 0),
    fill('token:A', 'buy', 10, 120, 1.2, 10),
    fill('token:A', 'sell', 5, 130, 0.65, 25),
    fill('token:A', 'sell', 15, 90, 1.35, 30),
    fill('token:B', 'buy', 1, 50, 0, 40),
    fill('token:B', 'sell', 1, 50, 0.05, 41),
    fill('token:B', 'buy', 2, 10, 0, 50),
    fill('token:B', 'sell', 2, 20, 0, 60),
    fill('token:C', 'buy', 3, 10, 0.3, 70),
  ];

  const tradeLedger = (given: typeof fills) => {
    const ledger = FillLedger.of(given.map((f, i) => ({ ...f, eventId: `e${i}` })));
    return { rows: [...ledger.rows()], stats: ledger.book.stats() };
  };

  it('realised P&L on the average cost with fees, holding time from the average buy time', () => {
    const { rows, stats } = tradeLedger(fills);
    // Cost of A: 1001 + 1201.2 = 2202.2 for 20 units, bought on average at hour 5.
    expect(rows.map((r) => r.realisedPnl)).toEqual([null, null, expect.closeTo(650 - 0.65 - 550.55, 9), expect.closeTo(1350 - 1.35 - 1651.65, 9), null, expect.closeTo(-0.05, 12), null, 20, null]);
    expect(rows.map((r) => (r.holdingMs === null ? null : r.holdingMs / h))).toEqual([null, null, 20, 25, null, 1, null, 10, null]);
    expect(stats.closedTrades).toBe(4);
    expect(stats.winRate).toBe(0.5);
    expect(stats.profitFactor).toBeCloseTo((98.8 + 20) / (303 + 0.05), 9);
    expect(stats.expectancy).toBeCloseTo((98.8 - 303 - 0.05 + 20) / 4, 9);
    expect(stats.averageWin).toBeCloseTo((98.8 + 20) / 2, 9);
    expect(stats.averageLoss).toBeCloseTo((-303 - 0.05) / 2, 9);
    expect(stats.bestTrade).toBeCloseTo(98.8, 9);
    expect(stats.worstTrade).toBeCloseTo(-303, 9);
    expect(stats.longestLosingStreak).toBe(2);
  });

  it('no losing sale: no profit factor; no sale: no win rate or expectancy', () => {
    expect(tradeLedger(fills.slice(6, 8)).stats).toMatchObject({ profitFactor: null, winRate: 1, longestLosingStreak: 0 });
    expect(tradeLedger(fills.slice(0, 1)).stats).toMatchObject({ closedTrades: 0, winRate: null, expectancy: null, bestTrade: null });
  });

  it('P&L per instrument adds up to the change in equity', () => {
    const open = [{ instrument: 'token:C', quantity: 3, costUsd: 30.3, price: 12 }];
    const byInstrument = instrumentPnl(tradeLedger(fills).rows, open);
    expect(byInstrument.map((i) => [i.instrument, i.buys, i.sells])).toEqual([
      ['token:A', 2, 2],
      ['token:C', 1, 0],
      ['token:B', 2, 2],
    ]);
    expect(byInstrument[1]!.unrealisedPnl).toBeCloseTo(36 - 30.3, 12);
    let cash = 0;
    for (const f of fills) cash += f.side === 'buy' ? -(f.quantity * f.price + f.feeUsd) : f.quantity * f.price - f.feeUsd;
    expect(byInstrument.reduce((a, i) => a + i.totalPnl, 0)).toBeCloseTo(cash + 3 * 12, 9);
  });

  it('counts refused orders by reason, most frequent first', () => {
    const r = (code: 'no_price' | 'insufficient_cash', instrument: string) => ({ code, instrument, reason: `${code} ${instrument}` });
    expect(rejectionSummary([r('insufficient_cash', 'x'), r('no_price', 'a'), r('no_price', 'b'), r('no_price', 'a')])).toEqual([
      { code: 'no_price', count: 3, instruments: ['a', 'b'], example: 'no_price a' },
      { code: 'insufficient_cash', count: 1, instruments: ['x'], example: 'insufficient_cash x' },
    ]);
  });
});

describe('FillLedger', () => {
  // Past the first capacity (1,024), over a few instruments, sales of more than is held among them.
  const random = mulberry32(7);
  const instruments = ['token:A', 'token:B', 'index:x'];
  const fills = Array.from({ length: 3_000 }, (_, i) => ({
    instrument: instruments[Math.floor(random() * 3)]!,
    side: random() < 0.55 ? ('buy' as const) : ('sell' as const),
    quantity: 1 + Math.floor(random() * 1000) / 7,
    price: 0.5 + random() * 200,
    feeUsd: random() < 0.1 ? 0 : random(),
    at: T0 + i * 60_000,
    eventId: `event-${Math.floor(i / 4)}`,
  }));

  it('keeps every fill as given, books it as a TradeBook does one at a time, and hashes the list as JSON', () => {
    const ledger = FillLedger.of(fills);
    expect(ledger.length).toBe(fills.length);
    expect(ledger.fills()).toEqual(fills);
    const book = new TradeBook();
    const rows = fills.map((f) => ({ ...book.add(f), eventId: f.eventId }));
    expect([...ledger.rows()]).toEqual(rows);
    expect(ledger.book.stats()).toEqual(book.stats());
    expect([...ledger.rows(-5)]).toEqual(rows.slice(-5));
    expect([...ledger.rows(-5_000)]).toEqual(rows);
    expect([...ledger.rows(2_990)]).toEqual(rows.slice(2_990));
    expect(ledger.instrumentsFilled).toEqual(
      instruments.filter((i) => fills.some((f) => f.instrument === i)).sort((a, b) => fills.findIndex((f) => f.instrument === a) - fills.findIndex((f) => f.instrument === b)),
    );
    expect(ledger.hash).toBe(createHash('sha256').update(JSON.stringify(fills)).digest('hex'));
    expect(new FillLedger().hash).toBe(createHash('sha256').update('[]').digest('hex'));
    expect(() => ledger.add(fills[0]!, 'late')).toThrow(/after the hash/);
  });

  it('strategyMetricsOf its book gives the figures strategyMetrics gives of the fills', () => {
    const curve = [
      { t: T0, value: 1000, exposure: 0 },
      { t: T0 + 3_000 * 60_000, value: 1100, exposure: 0.5 },
    ];
    expect(strategyMetricsOf(curve, FillLedger.of(fills).book)).toEqual(strategyMetrics(curve, fills));
  });
});
