import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { HistoryPoint } from '../../src/contract/index.ts';
import { type HistoryMoment, SnapshotStore, findGaps, mergeRanges, missingRanges } from '../../src/store/index.ts';
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
    const moments = [...store.history.moments(['x', 'y'], '1h', 0, 2 * H)];
    expect(moments.flatMap((m) => m.indexIds.map((indexId, i) => `${indexId}@${m.ts / H}=${m.navs[i]}`))).toEqual(['x@0=20', 'y@0=10', 'x@1=21', 'y@1=11', 'x@2=22']);
    const tokens = store.history.tokens();
    const cs = constituents(moments[0]!, 1).map((c) => ({ ...tokens.get(c.tokenId), price: c.priceUsd, weight: c.weight }));
    expect(cs).toEqual([
      { address: 'A'.repeat(44), symbol: 'AAA', price: 5, weight: 0.6 },
      { address: 'B'.repeat(44), symbol: 'BBB', price: 3, weight: 0.4 },
    ]);
    expect([...store.history.moments(['y'], '1h', H, H)].map((m) => m.navs)).toEqual([[11]]);
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

  it('gives a live bot the backfilled history, then the last NAV its polls saw in each interval after it; a replay the history alone', () => {
    const store = SnapshotStore.open(tempDbPath());
    const point = (ts: number, nav: number): HistoryPoint => ({ timestamp: new Date(ts).toISOString(), nav, constituents: [] });
    store.transaction(() => store.history.insertPoints('x', '1h', [point(0, 20), point(H, 21), point(2 * H, 22)]));
    const polled = (at: number, nav: number) =>
      store.insertPerformance(store.insertSnapshot({ endpoint: 'performance', indexId: 'x', fetchedAt: at, asOf: at, hash: `p${at}`, raw: '{}', status: 'accepted' }), {
        index_id: 'x',
        as_of: new Date(at).toISOString(),
        nav,
        returns: {},
      } as never);
    // Polled before the last backfilled point (the history has it), then three times in hour 3 and once in hour 4.
    polled(H + 60_000, 99);
    polled(3 * H + 60_000, 30);
    polled(3 * H + 1_800_000, 31);
    polled(3 * H + 3_000_000, 32);
    polled(4 * H + 120_000, 40);
    expect(store.historyBetween('x', '1h', 0, 5 * H)).toEqual([
      { ts: 0, nav: 20 },
      { ts: H, nav: 21 },
      { ts: 2 * H, nav: 22 },
      { ts: 3 * H + 3_000_000, nav: 32 },
      { ts: 4 * H + 120_000, nav: 40 },
    ]);
    // Only what was known at `to`: the hour still running gives its last poll so far.
    expect(store.historyBetween('x', '1h', 0, 3 * H + 1_800_000).at(-1)).toEqual({ ts: 3 * H + 1_800_000, nav: 31 });
    // Daily: one point per day, the last poll of it.
    expect(store.historyBetween('x', '1d', 0, 5 * H)).toEqual([{ ts: 4 * H + 120_000, nav: 40 }]);
    expect(store.history.between('x', '1h', 0, 5 * H)).toEqual([
      { ts: 0, nav: 20 },
      { ts: H, nav: 21 },
      { ts: 2 * H, nav: 22 },
    ]);
    store.close();
  });

  it('replays each time as one moment: every point in index id order, navs exact, constituents of any length or none', () => {
    const path = tempDbPath();
    const store = SnapshotStore.open(path);
    // Navs whose shortest decimal form needs 17 digits, and the extremes of a double.
    const navs = [0.1 + 0.2, 1 / 3, 2 / 3 + 1e-12, Number.MIN_VALUE, Number.MAX_VALUE, 123456.78901234567];
    const ids = Array.from({ length: 30 }, (_, i) => `i${String((i * 7) % 30).padStart(2, '0')}`);
    const sizes = (i: number) => (i % 4 === 3 ? null : i % 3);
    store.transaction(() => {
      // Written out of id order, so the order read back is the query's, not the writes'.
      for (const [i, indexId] of ids.entries()) {
        for (let t = 0; t < 3; t++) {
          const n = sizes(i + t);
          store.history.insertPoints(indexId, '1h', [
            {
              timestamp: new Date(t * H).toISOString(),
              nav: navs[(i + t) % navs.length]!,
              constituents: n === null ? null : Array.from({ length: n }, (_, k) => ({ address: `T${k}`.padEnd(44, 'x'), symbol: `T${k}`, price_usd: navs[(i + k) % navs.length]!, weight: k / 10 })),
            } as HistoryPoint,
          ]);
        }
      }
    });
    // With statistics the planner could choose another plan: the order must hold anyway.
    const db = new Database(path);
    db.exec('ANALYZE');
    db.close();
    const moments = [...store.history.moments(ids, '1h', 0, 2 * H)];
    expect(moments.map((m) => m.ts)).toEqual([0, H, 2 * H]);
    const sorted = [...ids].sort();
    for (const [t, m] of moments.entries()) {
      expect(m.indexIds).toEqual(sorted);
      for (const [p, indexId] of m.indexIds.entries()) {
        const i = ids.indexOf(indexId);
        expect(m.navs[p]).toBe(navs[(i + t) % navs.length]);
        const n = sizes(i + t) ?? 0;
        expect(constituents(m, p).map((c) => [c.priceUsd, c.weight])).toEqual(Array.from({ length: n }, (_, k) => [navs[(i + k) % navs.length], k / 10]));
      }
    }
    store.close();
  });
});

function constituents(m: HistoryMoment, p: number): { tokenId: number; priceUsd: number; weight: number }[] {
  const out = [];
  for (let k = m.ends[p - 1] ?? 0; k < m.ends[p]!; k += 3) out.push({ tokenId: m.values[k]!, priceUsd: m.values[k + 1]!, weight: m.values[k + 2]! });
  return out;
}
