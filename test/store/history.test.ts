import { describe, expect, it } from 'vitest';
import type { HistoryPoint } from '../../src/contract/index.ts';
import { SnapshotStore, findGaps, mergeRanges, missingRanges, unpackConstituents } from '../../src/store/index.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const H = 3_600_000;

describe('coverage ranges', () => {
  it('merges ranges that overlap or touch, and finds what is missing', () => {
    expect(
      mergeRanges([
        { from: 10, to: 20 },
        { from: 0, to: 5 },
        { from: 6, to: 8 },
        { from: 15, to: 30 },
      ]),
    ).toEqual([
      { from: 0, to: 8 },
      { from: 10, to: 30 },
    ]);
    expect(missingRanges({ from: 0, to: 100 }, [])).toEqual([{ from: 0, to: 100 }]);
    expect(missingRanges({ from: 0, to: 100 }, [{ from: 0, to: 100 }])).toEqual([]);
    expect(
      missingRanges({ from: 0, to: 100 }, [
        { from: 20, to: 30 },
        { from: 50, to: 200 },
      ]),
    ).toEqual([
      { from: 0, to: 19 },
      { from: 31, to: 49 },
    ]);
    expect(missingRanges({ from: 40, to: 45 }, [{ from: 0, to: 10 }])).toEqual([{ from: 40, to: 45 }]);
  });

  it('finds holes in a series with a point every step', () => {
    expect(findGaps([0, H, 2 * H], H)).toEqual([]);
    expect(findGaps([0, H, 5 * H, 6 * H], H)).toEqual([{ from: 2 * H, to: 4 * H }]);
  });
});

describe('history tables', () => {
  it('stores points with packed constituents and replays them in time order across indexes', () => {
    const store = SnapshotStore.open(tempDbPath());
    const point = (t: number, nav: number): HistoryPoint => ({
      timestamp: new Date(t).toISOString(),
      nav,
      constituents: [
        { address: 'A'.repeat(44), symbol: 'AAA', price_usd: nav / 2, weight: 0.6 },
        { address: 'B'.repeat(44), symbol: 'BBB', price_usd: 3, weight: 0.4 },
      ],
    });
    store.transaction(() => {
      store.history.insertPoints('y', '1h', [point(0, 10), point(H, 11)]);
      store.history.insertPoints('x', '1h', [point(0, 20), point(H, 21), point(2 * H, 22)]);
      store.history.addCoverage('history:1h', 'x', 0, 2 * H);
    });
    const rows = [...store.history.replay(['x', 'y'], '1h', 0, 2 * H)];
    expect(rows.map(([indexId, ts, nav]) => `${indexId}@${ts / H}=${nav}`)).toEqual(['x@0=20', 'y@0=10', 'x@1=21', 'y@1=11', 'x@2=22']);
    const tokens = store.history.tokens();
    const cs = unpackConstituents(rows[0]![3]).map((c) => ({ ...tokens.get(c.tokenId), price: c.priceUsd, weight: c.weight }));
    expect(cs).toEqual([
      { address: 'A'.repeat(44), symbol: 'AAA', price: 10, weight: 0.6 },
      { address: 'B'.repeat(44), symbol: 'BBB', price: 3, weight: 0.4 },
    ]);
    expect([...store.history.replay(['y'], '1h', H, H)].map((r) => r[2])).toEqual([11]);
    expect(store.history.coverage('history:1h', 'x')).toEqual([{ from: 0, to: 2 * H }]);
    expect(store.history.span('1h')).toEqual({ indexIds: ['x', 'y'], first: 0, last: 2 * H });
    // The live queries read history too, cut at the time asked.
    expect(store.navAt('x', H + 1)).toEqual({ nav: 21, asOf: H });
    expect(store.historyBetween('x', '1h', 0, H)).toEqual([
      { ts: 0, nav: 20 },
      { ts: H, nav: 21 },
    ]);
    store.close();
  });
});
