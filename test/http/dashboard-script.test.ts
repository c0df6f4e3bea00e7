import { describe, expect, it } from 'vitest';
import { weightChange } from '../../src/core/index.ts';
import { DASHBOARD_SCRIPT, equityRange, eventTime, sinkError } from '../../src/http/dashboard-script.ts';

describe('the dashboard’s weight changes', () => {
  it('show as many decimals as it takes for the two percents to differ, up to four; one when they do not', () => {
    expect(weightChange(0.5, 0.52)).toBe('50.0% -> 52.0%');
    expect(weightChange(0.3331, 0.3334)).toBe('33.31% -> 33.34%');
    expect(weightChange(0.123456, 0.12346)).toBe('12.3456% -> 12.3460%');
    expect(weightChange(0.2, 0.2)).toBe('20.0% -> 20.0%');
  });

  it('are written by the same function in the page', () => {
    expect(DASHBOARD_SCRIPT).toContain(weightChange.toString());
    expect(DASHBOARD_SCRIPT).toContain('weightChange(c.oldWeight, c.newWeight)');
    expect(DASHBOARD_SCRIPT).not.toContain('(c.oldWeight * 100).toFixed(1)');
  });
});

describe('the dashboard’s equity chart', () => {
  it('ranges over the data and a tenth of its span, and at least half a percent of its level: a flat 10,000 is not drawn on 0 to 20,000', () => {
    expect(equityRange(10_000, 10_000)).toEqual([9_950, 10_050]);
    expect(equityRange(9_000, 11_000)).toEqual([8_800, 11_200]);
    expect(equityRange(0, 0)).toEqual([-0.01, 0.01]);
    expect(equityRange(null, null)).toEqual([0, 1]);
    expect(DASHBOARD_SCRIPT).toContain(equityRange.toString());
    expect(DASHBOARD_SCRIPT).toContain('range: function (u, min, max) { return equityRange(min, max); }');
  });
});

describe('the dashboard’s live feed', () => {
  it('dates an event when it happened in the market, as fills are dated, not when it was seen (found by trial 25: the demo mixed wall-clock and simulated times)', () => {
    const announcedAt = Date.UTC(2026, 11, 3, 12);
    const seen = Date.UTC(2026, 10, 24, 20, 1);
    expect(eventTime({ occurredAt: announcedAt, detectedAt: seen })).toBe(announcedAt);
    expect(eventTime({ detectedAt: seen })).toBe(seen);
    expect(DASHBOARD_SCRIPT).toContain(eventTime.toString());
    expect(DASHBOARD_SCRIPT).toContain('time(eventTime(data))');
    expect(DASHBOARD_SCRIPT).not.toContain('time(data.detectedAt)');
  });
});

describe('the dashboard’s alert sinks', () => {
  it('show a pending alert’s last failure, else why the last given up was (the review: a give-up’s reason was lost once kept apart)', () => {
    expect(sinkError({ lastError: 'HTTP 500', lastGiveUpError: 'refused: HTTP 400' })).toBe('HTTP 500');
    expect(sinkError({ lastError: null, lastGiveUpError: 'refused: HTTP 400' })).toBe('gave up: refused: HTTP 400');
    expect(sinkError({ lastError: null, lastGiveUpError: null })).toBe('');
    expect(DASHBOARD_SCRIPT).toContain(sinkError.toString());
    expect(DASHBOARD_SCRIPT).toContain('a.delivered, a.givenUp, sinkError(a)]');
  });
});
