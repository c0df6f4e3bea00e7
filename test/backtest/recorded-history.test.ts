import { describe, expect, it } from 'vitest';
import { RecordedHistory } from '../../src/backtest/recorded-history.ts';
import { SnapshotStore } from '../../src/store/index.ts';
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
});
