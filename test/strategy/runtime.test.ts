import { describe, expect, it } from 'vitest';
import type { NewEvent } from '../../src/detect/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { StrategyRuntime, consumerOf, loadStrategies } from '../../src/strategy/index.ts';
import { captureLogger } from '../helpers/fake-transport.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const T0 = Date.UTC(2026, 10, 22, 10);
const announced = (i: number, detectedAt = T0 + i): NewEvent => ({
  id: `rebalance.announced:sindex:rb_${i}`,
  type: 'rebalance.announced',
  indexId: 'sindex',
  occurredAt: T0 + i,
  detectedAt,
  payload: { rebalanceId: `rb_${i}`, announcedAt: T0, effectiveAt: T0 + 3_600_000, reason: 'manual', changes: [] },
});
const perf = (i: number, asOf: number): NewEvent => ({
  id: `performance.updated:sindex:${i}`,
  type: 'performance.updated',
  indexId: 'sindex',
  occurredAt: asOf,
  detectedAt: asOf,
  payload: { nav: 1000 + i, returns: {}, asOf },
});

async function runtimeFor(dir: string, store: SnapshotStore, extra: Partial<ConstructorParameters<typeof StrategyRuntime>[0]> = {}) {
  const { logger, lines } = captureLogger();
  const strategies = await loadStrategies(`test/fixtures/strategies/${dir}`, { logger });
  return { runtime: new StrategyRuntime({ store, strategies, logger, maxAttempts: 2, retryBaseMs: 1, startedAt: T0 + 1_000, ...extra }), lines };
}

describe('StrategyRuntime', () => {
  it('parks the events of a strategy that always throws, while the others go on', async () => {
    const store = SnapshotStore.open(tempDbPath());
    store.appendEvents([announced(1), perf(2, T0 + 2), announced(3)]);
    const { runtime, lines } = await runtimeFor('mixed', store);
    await runtime.drain();
    const t = store.strategies;
    expect(t.stateEntries('counting').get('count')).toBe(3);
    expect(t.parked('always-throws').map((p) => [p.seq, p.attempts, p.error.split('\n')[0]])).toEqual([
      [1, 2, 'Error: strategy bug'],
      [2, 2, 'Error: strategy bug'],
      [3, 2, 'Error: strategy bug'],
    ]);
    // The author gets the line that threw (item 19), and none of the runtime's own frames.
    const fixture = /always-throws\.ts:\d+:\d+/;
    for (const p of t.parked('always-throws')) {
      expect(p.error.split('\n')[1]).toMatch(fixture);
      expect(p.error).not.toMatch(/strategy[/\\]runtime\.ts/);
    }
    for (const name of ['counting', 'always-throws', 'too-slow']) expect(store.cursor(consumerOf(name))).toBe(3);
    expect(lines.join('\n')).toMatch(/event parked for this strategy/);
    store.close();
  });

  it('times out a slow handler and commits nothing it did', async () => {
    const store = SnapshotStore.open(tempDbPath());
    store.appendEvents([announced(1)]);
    const { runtime } = await runtimeFor('mixed', store);
    await runtime.drain();
    expect(store.strategies.parked('too-slow')[0]!.error).toMatch(/passed its 50 ms limit/);
    expect([...store.strategies.stateEntries('too-slow').keys()]).toEqual([]);
    store.close();
  });

  it('re-delivers parked events on request', async () => {
    const store = SnapshotStore.open(tempDbPath());
    store.appendEvents([announced(1)]);
    const { runtime } = await runtimeFor('mixed', store);
    await runtime.drain();
    expect(await runtime.retryParked('always-throws')).toBe(0);
    expect(store.strategies.parked('always-throws')).toHaveLength(1);
    store.close();
  });

  it('delivers each event once across restarts, and flags those logged before the run as replayed', async () => {
    const path = tempDbPath();
    let store = SnapshotStore.open(path);
    store.appendEvents([announced(1), announced(2)]);
    await (await runtimeFor('counting', store)).runtime.drain();
    store.appendEvents([announced(3)]);
    store.close();
    store = SnapshotStore.open(path);
    await (await runtimeFor('counting', store)).runtime.drain();
    const state = store.strategies.stateEntries('counting');
    expect(state.get('count')).toBe(3);
    expect(state.get('seen')).toEqual(['rebalance.announced:sindex:rb_1', 'rebalance.announced:sindex:rb_2', 'rebalance.announced:sindex:rb_3']);
    store.close();
  });

  it('never shows a strategy data stamped after its now', async () => {
    const store = SnapshotStore.open(tempDbPath());
    const comp = (asOf: number, id: number) => {
      const sid = store.insertSnapshot({ endpoint: 'composition', indexId: 'sindex', fetchedAt: asOf, asOf, hash: `h${id}`, raw: '{}', status: 'accepted' });
      store.insertComposition(sid, {
        index_id: 'sindex',
        as_of: new Date(asOf).toISOString(),
        rebalance_id: null,
        constituents: [{ address: 'A', symbol: 'A', weight: 1, target_weight: 1, price_usd: id }],
      } as never);
    };
    comp(T0, 1);
    comp(T0 + 60_000, 2);
    store.insertPerformance(store.insertSnapshot({ endpoint: 'performance', indexId: 'sindex', fetchedAt: T0, asOf: T0, hash: 'p1', raw: '{}', status: 'accepted' }), {
      index_id: 'sindex',
      as_of: new Date(T0).toISOString(),
      nav: 1000,
      returns: {},
    } as never);
    store.insertPerformance(store.insertSnapshot({ endpoint: 'performance', indexId: 'sindex', fetchedAt: T0 + 60_000, asOf: T0 + 60_000, hash: 'p2', raw: '{}', status: 'accepted' }), {
      index_id: 'sindex',
      as_of: new Date(T0 + 60_000).toISOString(),
      nav: 2000,
      returns: {},
    } as never);
    store.upsertRebalance(
      { id: 'rb_future', index_id: 'sindex', status: 'announced', announced_at: new Date(T0 + 90_000).toISOString(), effective_at: new Date(T0 + 200_000).toISOString(), changes: [] } as never,
      T0 + 90_000,
    );
    store.appendEvents([perf(1, T0 + 30_000)]);
    const clock = { now: () => T0 + 30_000, setTimeout: (f: () => void, ms: number) => setTimeout(f, ms), clearTimeout: (h: unknown) => clearTimeout(h as NodeJS.Timeout) };
    await (await runtimeFor('lookahead', store, { clock })).runtime.drain();
    const s = store.strategies.stateEntries('peek');
    expect(s.get('compositionAsOf')).toBe(T0);
    expect(s.get('nav')).toBe(1000);
    expect(s.get('rebalances')).toEqual([]);
    store.close();
  });
});
