import { describe, expect, it } from 'vitest';
import { DAY_MS, type EquityPoint, dailyCloses, drawdowns, returnMetrics, strategyMetrics } from '../../src/backtest/index.ts';

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
    // Under the 120 peak from day 2 until the new high on day 4.
    expect(m.maxDrawdownDurationMs).toBe(2 * DAY_MS);
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
    expect(m.maxDrawdownDurationMs).toBe(DAY_MS);
  });

  it('hourly points: daily returns come from the last point of each UTC day', () => {
    const hourly = Array.from({ length: 72 }, (_, h) => ({ t: T0 + h * 3_600_000, value: 100 + h }));
    const closes = dailyCloses(hourly);
    expect(closes.map((c) => c.value)).toEqual([123, 147, 171]);
    expect(
      drawdowns([
        { t: 0, value: 10 },
        { t: 1, value: 5 },
        { t: 2, value: 20 },
      ]).map((d) => d.value),
    ).toEqual([0, -0.5, 0]);
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
