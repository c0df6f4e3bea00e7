import { describe, expect, it } from 'vitest';
import { DAY_MS } from '../../src/backtest/index.ts';
import { DailyCloses } from '../../src/backtest/series.ts';

const H = 3_600_000;
const T0 = Date.UTC(2025, 0, 1, 10);

describe('DailyCloses', () => {
  it('keeps the first point, one point per 00:00 UTC crossed at the value as of then, and the last', () => {
    let value = 0;
    let asked = 0;
    const closes = new DailyCloses({
      closeAt: () => {
        asked++;
        return { value };
      },
    });
    closes.start(T0, { value: 1 });
    // Hourly observations for a day and a half, then a hole of three days.
    for (let h = 1; h <= 36; h++) {
      closes.advance(T0 + h * H);
      value = h;
    }
    closes.advance(T0 + 36 * H + 3 * DAY_MS);
    value = 99;
    closes.finish();
    const midnight = Date.UTC(2025, 0, 2);
    expect(closes.curve().pairs()).toEqual([
      [T0, 1],
      // The item at 00:00 itself (h = 14) counts as at or before the boundary.
      [midnight, 14],
      [midnight + DAY_MS, 36],
      [midnight + 2 * DAY_MS, 36],
      [midnight + 3 * DAY_MS, 36],
      [T0 + 36 * H + 3 * DAY_MS, 99],
    ]);
    // The value is computed once per crossing plus once at the end, not per observation.
    expect(asked).toBe(3);
  });

  it('keeps equity with its exposure, past the first columns it allocated', () => {
    let close = { value: 100, exposure: 0 };
    const closes = new DailyCloses({ closeAt: () => close });
    closes.start(T0, close);
    for (let d = 1; d <= 200; d++) {
      close = { value: 100 + d - 1, exposure: (d - 1) / 200 };
      closes.advance(T0 + d * DAY_MS);
    }
    close = { value: 300, exposure: 1 };
    closes.finish();
    const points = closes.equityPoints();
    expect(points).toHaveLength(202);
    expect(points[1]).toEqual({ t: Date.UTC(2025, 0, 2), value: 100, exposure: 0 });
    expect(points[200]).toEqual({ t: Date.UTC(2025, 0, 2) + 199 * DAY_MS, value: 299, exposure: 199 / 200 });
    expect(points.at(-1)).toEqual({ t: T0 + 200 * DAY_MS, value: 300, exposure: 1 });
  });

  it('a single observation is a single point', () => {
    const closes = new DailyCloses({ closeAt: () => ({ value: 6 }) });
    closes.start(T0, { value: 5 });
    closes.finish();
    expect(closes.curve().pairs()).toEqual([[T0, 5]]);
  });
});
