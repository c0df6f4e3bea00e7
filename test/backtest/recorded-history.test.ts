import { describe, expect, it, vi } from 'vitest';
import { buildReport, reportJson, runBacktest } from '../../src/backtest/index.ts';
import { FEED_START, RecordedHistory, type RecordingData, joinRecordings, recordMoments, sharedBudget } from '../../src/backtest/recorded-history.ts';
import { pieceCount, splitRange } from '../../src/backtest/sweep.ts';
import { replayRange } from '../../src/backtest/replay.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { loadStrategy } from '../../src/strategy/index.ts';
import { H, T0, buildCache } from '../helpers/backtest-cache.ts';

const ids = ['x', 'y'];

describe('RecordedHistory', () => {
  it('gives what the cache gives, and after one whole read the same moments without reading again', () => {
    const store = SnapshotStore.open(buildCache(), { readonly: true });
    const recorded = new RecordedHistory(store, 2 ** 20);
    const fromCache = [...store.history.moments(ids, '1h', T0, T0 + 119 * H)];
    const first = [...recorded.moments(ids, '1h', T0, T0 + 119 * H)];
    expect(first).toEqual(fromCache);
    expect(first).toHaveLength(120);
    expect(recorded.bytes).toBeGreaterThan(120 * 3 * 3 * 8);
    const again = [...recorded.moments(ids, '1h', T0, T0 + 119 * H)];
    expect(again).toEqual(first);
    // Not read again: the navs are those the first read parsed.
    expect(again.every((m, i) => m.navs === first[i]!.navs)).toBe(true);
    // Another range is another recording.
    const part = [...recorded.moments(ids, '1h', T0, T0 + 9 * H)];
    expect(part).toEqual(fromCache.slice(0, 10));
    expect(part[0]!.navs).not.toBe(first[0]!.navs);
    store.close();
  });

  it('read in pieces of time and joined, gives the moments of the whole range, in order, with no piece keeping the spare room of a block', () => {
    const store = SnapshotStore.open(buildCache(), { readonly: true });
    const whole = [...store.history.moments(ids, '1h', T0, T0 + 119 * H)];
    for (const count of [1, 2, 7, 120]) {
      const pieces = splitRange(T0, T0 + 119 * H, H, count);
      const read = pieces.map(([from, to]) => recordMoments(store, ids, '1h', from, to, sharedBudget(2 ** 20)) as RecordingData);
      // Trimmed: the blocks hold the values and no more.
      for (const r of read) expect(r.blocks.reduce((n, b) => n + b.length, 0)).toBe(r.start.at(-1)! + 3 * 3);
      const history = new RecordedHistory(store, 2 ** 20);
      expect(history.keepRead(ids, '1h', T0, T0 + 119 * H, joinRecordings(read))).toBe(true);
      expect([...history.moments(ids, '1h', T0, T0 + 119 * H)]).toEqual(whole);
      // The status changes were kept beside them: a run reads nothing more.
      expect(history.share().transitions).toHaveLength(2);
    }
    expect(recordMoments(store, ids, '1h', T0, T0 + 119 * H, sharedBudget(1_000))).toBe('over budget');
    // The budget is the range's: pieces read against one budget are over it together, though each alone is not.
    const shared = sharedBudget(12_000);
    expect(recordMoments(store, ids, '1h', T0, T0 + 59 * H, shared)).not.toBe('over budget');
    expect(recordMoments(store, ids, '1h', T0 + 60 * H, T0 + 119 * H, shared)).toBe('over budget');
    expect(recordMoments(store, ids, '1h', T0 + 60 * H, T0 + 119 * H, sharedBudget(12_000))).not.toBe('over budget');
    expect(new RecordedHistory(store, 1_000).keepRead(ids, '1h', T0, T0 + 119 * H, recordMoments(store, ids, '1h', T0, T0 + 119 * H, sharedBudget(2 ** 20)) as RecordingData)).toBe(false);
    store.close();
  });

  it('splits a range into pieces of whole intervals that cover it once, a few per thread and one on one thread', () => {
    expect(splitRange(0, 9 * H, H, 3)).toEqual([
      [0, 4 * H - 1],
      [4 * H, 8 * H - 1],
      [8 * H, 9 * H],
    ]);
    expect(splitRange(0, 9 * H, H, 1)).toEqual([[0, 9 * H]]);
    // More pieces asked than intervals held: one interval each.
    expect(splitRange(0, 2 * H, H, 10)).toHaveLength(3);
    // A range that does not start on the hour is still covered to its last ms.
    const odd = splitRange(17, 17 + 5 * H + 3, H, 2);
    expect(odd[0]![0]).toBe(17);
    expect(odd.at(-1)![1]).toBe(17 + 5 * H + 3);
    for (let i = 1; i < odd.length; i++) expect(odd[i]![0]).toBe(odd[i - 1]![1] + 1);
    expect(pieceCount(1_000_000, 1)).toBe(1);
    expect(pieceCount(1_000, 2)).toBe(1);
    expect(pieceCount(60_000, 2)).toBe(3);
    expect(pieceCount(1_000_000, 2)).toBe(8);
  });

  it('gives the rebalance status changes the cache gives, parsed once', () => {
    const store = SnapshotStore.open(buildCache(), { readonly: true });
    const recorded = new RecordedHistory(store, 2 ** 20);
    const fromCache = [...store.rebalanceTransitions(ids, T0, T0 + 119 * H)];
    expect(fromCache.map((t) => t.status)).toEqual(['announced', 'completed']);
    const first = [...recorded.transitions(ids, T0, T0 + 119 * H)];
    expect(first).toEqual(fromCache);
    const again = [...recorded.transitions(ids, T0, T0 + 119 * H)];
    expect(again).toEqual(first);
    expect(again.every((t, i) => t.record === first[i]!.record)).toBe(true);
    // Ended early (a handler threw), a read keeps nothing.
    const other = recorded.transitions(ids, T0 + H, T0 + 119 * H);
    other.next();
    other.return(undefined);
    expect([...recorded.transitions(ids, T0 + H, T0 + 119 * H)]).toEqual(fromCache);
    store.close();
  });

  it('keeps nothing of a read stopped early, nor of a range over its budget', () => {
    const store = SnapshotStore.open(buildCache(), { readonly: true });
    const recorded = new RecordedHistory(store, 2 ** 20);
    for (const m of recorded.moments(ids, '1h', T0, T0 + 119 * H)) if (m.ts >= T0 + 5 * H) break;
    expect(recorded.bytes).toBe(0);
    const whole = [...recorded.moments(ids, '1h', T0, T0 + 119 * H)];
    expect(whole).toHaveLength(120);

    const small = new RecordedHistory(store, 1_000);
    const first = [...small.moments(ids, '1h', T0, T0 + 119 * H)];
    const second = [...small.moments(ids, '1h', T0, T0 + 119 * H)];
    expect(second).toEqual(first);
    expect(second[0]!.navs).not.toBe(first[0]!.navs);
    expect(small.bytes).toBe(0);
    for (const bad of [-1, 1.5, Number.NaN, 2 ** 41]) expect(() => new RecordedHistory(store, bad)).toThrow(`Expected \`budgetBytes\` to be an integer from 0 to 2^40, got \`${bad}\``);
    store.close();
  });

  it('keeps ahead of a run all the run reads: the run then reads no history from the cache, and reports the same', async () => {
    const strategy = await loadStrategy(new URL('../fixtures/backtest/announce-buyer.ts', import.meta.url).pathname, { notionalUsd: 100 });
    // From before the cache's first point: the run narrows the range, and so must what is kept.
    const options = { indexes: ids, from: T0 - 48 * H, to: T0 + 119 * H, allowGaps: true };
    const store = SnapshotStore.open(buildCache(), { readonly: true });
    const plain = reportJson(buildReport(await runBacktest({ ...options, cache: store, strategy })));
    const { settings } = replayRange(store, options);
    const recorded = new RecordedHistory(store, 2 ** 20);
    expect(recorded.keep(settings.indexes, settings.interval, settings.from, settings.to)).toBe(true);
    const moments = vi.spyOn(store.history, 'moments');
    const transitions = vi.spyOn(store, 'rebalanceTransitions');
    const kept = reportJson(buildReport(await runBacktest({ ...options, cache: store, strategy, history: recorded })));
    expect(moments).not.toHaveBeenCalled();
    expect(transitions).not.toHaveBeenCalled();
    expect(kept).toBe(plain);
    store.close();
  });

  it('stops reading once a range passes its budget, and keeps nothing of it', () => {
    const store = SnapshotStore.open(buildCache(), { readonly: true });
    const read = store.history.moments.bind(store.history);
    let yielded = 0;
    vi.spyOn(store.history, 'moments').mockImplementation(function* (...args) {
      for (const m of read(...args)) {
        yielded++;
        yield m;
      }
    });
    const small = new RecordedHistory(store, 2_000);
    expect(small.keep(ids, '1h', T0, T0 + 119 * H)).toBe(false);
    expect(small.bytes).toBe(0);
    // A moment of x and y takes about 150 bytes: the read ends a few moments past 2000, not at the 120th.
    expect(yielded).toBeGreaterThan(10);
    expect(yielded).toBeLessThan(20);
    store.close();
  });

  it('shares what it kept with another thread: the values in shared memory, and no read of the cache there', () => {
    const path = buildCache();
    const store = SnapshotStore.open(path, { readonly: true });
    const fromCache = [...store.history.moments(ids, '1h', T0, T0 + 119 * H)];
    const feed = [...store.rebalanceTransitions(ids, FEED_START, T0 + 50 * H)];
    const recorded = new RecordedHistory(store, 2 ** 20);
    expect(recorded.keep(ids, '1h', T0 + 50 * H, T0 + 119 * H)).toBe(true);
    const kept = [...recorded.moments(ids, '1h', T0 + 50 * H, T0 + 119 * H)];
    // As a message carries it to a worker.
    const shared = structuredClone(recorded.share());
    store.close();
    // Closed: anything read from it would throw.
    const other = RecordedHistory.fromShared(SnapshotStore.open(path, { readonly: true }), shared);
    const closed = SnapshotStore.open(path, { readonly: true });
    closed.close();
    const there = RecordedHistory.fromShared(closed, shared);
    const moments = [...there.moments(ids, '1h', T0 + 50 * H, T0 + 119 * H)];
    expect(moments).toEqual(fromCache.slice(50));
    expect(moments.every((m) => m.values.buffer instanceof SharedArrayBuffer)).toBe(true);
    // One copy: a value changed here is changed there.
    const values = kept[0]!.values;
    values[1] = -1;
    expect(moments[0]!.values[1]).toBe(-1);
    expect([...there.transitions(ids, FEED_START, T0 + 50 * H)]).toEqual(feed);
    expect(there.bytes).toBe(recorded.bytes);
    // A range not kept is read from the cache.
    expect([...other.moments(ids, '1h', T0, T0 + 9 * H)]).toEqual(fromCache.slice(0, 10));
    expect(() => [...there.moments(ids, '1h', T0, T0 + 9 * H)]).toThrow();
  });
});
