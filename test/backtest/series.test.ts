import { describe, expect, it } from 'vitest';
import { DAY_MS, type ValuePoint } from '../../src/backtest/index.ts';
import { DailyCloses } from '../../src/backtest/series.ts';

const H = 3_600_000;
const T0 = Date.UTC(2025, 0, 1, 10);

describe('DailyCloses', () => {
  it('keeps the first point, one point per 00:00 UTC crossed at the value as of then, and the last', () => {
    const closes = new DailyCloses<ValuePoint>();
    let value = 0;
    let asked = 0;
    const valueNow = (t: number) => {
      asked++;
      return { t, value };
    };
    closes.start({ t: T0, value: 1 });
    // Hourly observations for a day and a half, then a hole of three days.
    for (let h = 1; h <= 36; h++) {
      closes.advance(T0 + h * H, valueNow);
      value = h;
    }
    closes.advance(T0 + 36 * H + 3 * DAY_MS, valueNow);
    value = 99;
    const points = closes.finish(valueNow);
    const midnight = Date.UTC(2025, 0, 2);
    expect(points).toEqual([
      { t: T0, value: 1 },
      // The item at 00:00 itself (h = 14) counts as at or before the boundary.
      { t: midnight, value: 14 },
      { t: midnight + DAY_MS, value: 36 },
      { t: midnight + 2 * DAY_MS, value: 36 },
      { t: midnight + 3 * DAY_MS, value: 36 },
      { t: T0 + 36 * H + 3 * DAY_MS, value: 99 },
    ]);
    // The value is computed once per crossing plus once at the end, not per observation.
    expect(asked).toBe(3);
  });

  it('a single observation is a single point', () => {
    const closes = new DailyCloses<ValuePoint>();
    closes.start({ t: T0, value: 5 });
    expect(closes.finish((t) => ({ t, value: 6 }))).toEqual([{ t: T0, value: 5 }]);
  });
});
