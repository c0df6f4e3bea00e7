import { describe, expect, it, vi } from 'vitest';
import type { NewEvent } from '../../src/detect/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { z } from 'zod';
import { ManualClock } from '../../src/core/index.ts';
import { type LoadedStrategy, StrategyRuntime, consumerOf, defineStrategy, loadStrategies } from '../../src/strategy/index.ts';
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

/**
 * As a runner hands events on: each appended, announced, and `passed` awaited before the next.
 * No timer fires until the stop (fake timers), so only the strategies' progress can answer.
 */
async function handOnOneByOne(store: SnapshotStore, runtime: StrategyRuntime, count: number, afterEach: (seq: number) => void = () => {}, beforeStop: () => void = () => {}) {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  try {
    runtime.start();
    for (let seq = 1; seq <= count; seq++) {
      store.appendEvents([announced(seq)]);
      runtime.notify();
      await runtime.passed(seq);
      afterEach(seq);
    }
    beforeStop();
    // Stopping waits out a backoff in hand.
    const stopped = runtime.stop();
    await vi.runAllTimersAsync();
    await stopped;
  } finally {
    vi.useRealTimers();
  }
}

describe('StrategyRuntime', () => {
  it("newStrategiesFrom 'end': a strategy new to the database starts after its events; one it knows catches up; the default reads them all (trial 28)", async () => {
    const seen = async (known: boolean, newStrategiesFrom?: 'end') => {
      const store = SnapshotStore.open(tempDbPath());
      if (known) store.setCursor(consumerOf('counting'), 0, T0);
      store.appendEvents([announced(1), announced(2)]);
      const { runtime, lines } = await runtimeFor('counting', store, { newStrategiesFrom });
      await runtime.drain();
      store.appendEvents([announced(3)]);
      await runtime.drain();
      const ids = store.strategies.stateEntries('counting').get('seen');
      store.close();
      return { ids, told: lines.filter((l) => l.includes('strategy new to this database')).length };
    };
    expect(await seen(false, 'end')).toEqual({ ids: ['rebalance.announced:sindex:rb_3'], told: 1 });
    expect(await seen(true, 'end')).toEqual({ ids: ['rebalance.announced:sindex:rb_1', 'rebalance.announced:sindex:rb_2', 'rebalance.announced:sindex:rb_3'], told: 0 });
    expect((await seen(false)).ids).toHaveLength(3);
  });

  it("newStrategiesFrom 'end' on a new database records where a strategy starts at once: killed before its first commit, the restart skips nothing (CI)", async () => {
    const store = SnapshotStore.open(tempDbPath());
    // Started, then killed before it committed anything: no handler ran.
    await runtimeFor('counting', store, { newStrategiesFrom: 'end' });
    expect(store.cursors().map((c) => [c.consumer, c.seq])).toEqual([[consumerOf('counting'), 0]]);
    store.appendEvents([announced(1), announced(2)]);
    const { runtime } = await runtimeFor('counting', store, { newStrategiesFrom: 'end' });
    await runtime.drain();
    expect(store.strategies.stateEntries('counting').get('count')).toBe(2);
    store.close();
  });

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
      expect(p.error).not.toMatch(/strategy[/\\](runtime|runner|attempt)\.ts/);
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

  it('re-delivers parked events on request: a handler still failing stays parked, a fixed one commits and unparks', async () => {
    const store = SnapshotStore.open(tempDbPath());
    store.appendEvents([announced(1), announced(2)]);
    const { runtime } = await runtimeFor('fixable', store);
    process.env.FIXABLE_BROKEN = '1';
    try {
      await runtime.drain();
      expect(store.strategies.parked('fixable').map((p) => p.seq)).toEqual([1, 2]);
      expect(await runtime.retryParked('fixable')).toBe(0);
      expect(store.strategies.parked('fixable')).toHaveLength(2);
    } finally {
      delete process.env.FIXABLE_BROKEN;
    }
    expect(await runtime.retryParked('fixable')).toBe(2);
    expect(store.strategies.parked('fixable')).toEqual([]);
    // Their effects were committed with the unpark, and the cursor did not move back.
    expect(store.strategies.stateEntries('fixable').get('seen')).toEqual(['rebalance.announced:sindex:rb_1', 'rebalance.announced:sindex:rb_2']);
    expect(store.strategies.alertCount('fixable')).toBe(2);
    expect(store.cursor(consumerOf('fixable'))).toBe(2);
    // Nothing is left to retry.
    expect(await runtime.retryParked('fixable')).toBe(0);
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

  it('refuses maxAttempts 0 (it would park every event with no error) and other out-of-range limits, naming the value', async () => {
    const store = SnapshotStore.open(tempDbPath());
    await expect(runtimeFor('counting', store, { maxAttempts: 0 })).rejects.toThrow('Expected `maxAttempts` to be an integer from 1 to 100, got `0`');
    await expect(runtimeFor('counting', store, { timeoutMs: 2 ** 31 })).rejects.toThrow(/`timeoutMs` .* got `2147483648`/);
    await expect(runtimeFor('counting', store, { retryBaseMs: -1 })).rejects.toThrow(/`retryBaseMs`/);
    store.close();
  });

  it('times a handler out on the injected clock', async () => {
    const store = SnapshotStore.open(tempDbPath());
    store.appendEvents([announced(1)]);
    const clock = new ManualClock(T0 + 10_000);
    const strategies: LoadedStrategy[] = [
      {
        file: 'hangs.ts',
        params: {},
        strategy: defineStrategy({ name: 'hangs', params: z.object({}), timeoutMs: 60_000, on: { 'rebalance.announced': () => new Promise<void>(() => {}) } }),
      },
    ];
    const runtime = new StrategyRuntime({ store, strategies, clock, maxAttempts: 1 });
    let done = false;
    const drained = runtime.drain().then(() => {
      done = true;
    });
    await new Promise((r) => setTimeout(r, 50));
    // Real time passes, the injected clock does not: still waiting.
    expect(done).toBe(false);
    await clock.advance(60_000);
    await drained;
    expect(store.strategies.parked('hangs')[0]!.error).toMatch(/passed its 60000 ms limit/);
    store.close();
  });

  it('ctx.state: a handler reads its own writes, a failed one leaves nothing, a committed one is read by the next', async () => {
    const store = SnapshotStore.open(tempDbPath());
    store.appendEvents([announced(1), announced(2), announced(3)]);
    const seen: unknown[] = [];
    const strategies: LoadedStrategy[] = [
      {
        file: 'stateful.ts',
        params: {},
        strategy: defineStrategy({
          name: 'stateful',
          params: z.object({}),
          on: {
            'rebalance.announced': (e, ctx) => {
              seen.push({ seq: e.seq, before: ctx.state.get('list') ?? null, keys: ctx.state.keys() });
              const list = ctx.state.get<number[]>('list') ?? [];
              list.push(e.seq);
              ctx.state.set('list', list);
              ctx.state.set(`at:${e.seq}`, e.seq);
              ctx.state.delete('gone');
              // Your own write, at once (and a key deleted is gone).
              if (ctx.state.get<number[]>('list')!.at(-1) !== e.seq || ctx.state.get('gone') !== undefined) throw new Error('own write not visible');
              if (e.seq === 2) throw new Error('fails after writing');
            },
          },
        }),
      },
    ];
    store.transaction(() => store.strategies.setState('stateful', 'gone', '1'));
    await new StrategyRuntime({ store, strategies, maxAttempts: 1 }).drain();
    expect(seen).toEqual([
      { seq: 1, before: null, keys: ['gone'] },
      // Event 1 committed; event 2's writes failed with it and are seen by nobody.
      { seq: 2, before: [1], keys: ['at:1', 'list'] },
      { seq: 3, before: [1], keys: ['at:1', 'list'] },
    ]);
    expect(Object.fromEntries(store.strategies.stateEntries('stateful'))).toEqual({ list: [1, 3], 'at:1': 1, 'at:3': 3 });
    store.close();
  });

  it('ctx.state: a value JSON cannot hold is refused at the set that gave it, naming the key; one deep inside is named at the commit (trial 36)', async () => {
    const store = SnapshotStore.open(tempDbPath());
    store.appendEvents([1, 2, 3, 4, 5, 6].map((seq) => announced(seq)));
    const lines: Record<number, string> = {};
    const strategies: LoadedStrategy[] = [
      {
        file: 'bad-state.ts',
        params: {},
        strategy: defineStrategy({
          name: 'bad-state',
          params: z.object({}),
          on: {
            'rebalance.announced': (e, ctx) => {
              try {
                if (e.seq === 1) ctx.state.set('big', 1n);
                if (e.seq === 2) ctx.state.set('held', new Map([['A', 1]]));
                if (e.seq === 3) ctx.state.set('ratio', 0 / 0);
                if (e.seq === 4) ctx.state.set('when', new Date(0));
              } catch (x) {
                lines[e.seq] = (x as Error).stack!.split('\n')[1]!;
                throw x;
              }
              if (e.seq === 5) ctx.state.set('nested', { at: { big: 2n } });
              if (e.seq === 6) ctx.state.set('fine', { at: 6 });
            },
          },
        }),
      },
    ];
    await new StrategyRuntime({ store, strategies, maxAttempts: 1 }).drain();
    const parked = store.strategies.parked('bad-state').map((p) => p.error.split('\n')[0]);
    expect(parked).toEqual([
      'TypeError: ctx.state.set("big", ...): a bigint is not a JSON value; store a string, a number, an array or a plain object',
      'TypeError: ctx.state.set("held", ...): a Map (JSON stores it as {}) is not a JSON value; store a string, a number, an array or a plain object',
      'TypeError: ctx.state.set("ratio", ...): NaN (JSON stores it as null) is not a JSON value; store a string, a number, an array or a plain object',
      'TypeError: ctx.state.set("when", ...): a Date (JSON stores it as a string; store its getTime()) is not a JSON value; store a string, a number, an array or a plain object',
      'TypeError: ctx.state.set("nested", ...): the value is not JSON: Do not know how to serialize a BigInt',
    ]);
    // The first frame under the error is this file's handler: the line that called set.
    expect(lines[1]).toContain('runtime.test.ts');
    expect(Object.fromEntries(store.strategies.stateEntries('bad-state'))).toEqual({ fine: { at: 6 } });
    store.close();
  });

  it('ctx.state: a committed key is parsed once per strategy, read as a copy the handler may change freely, and found again after a restart', async () => {
    const path = tempDbPath();
    let store = SnapshotStore.open(path);
    store.appendEvents([announced(1), announced(2), announced(3)]);
    const plan = { n: 1, tokens: ['A', 'B'], nested: { sold: false } };
    store.transaction(() => store.strategies.setState('reader', 'plan', JSON.stringify(plan)));
    const planText = JSON.stringify(plan);
    const reads: unknown[] = [];
    const reader = (name: string): LoadedStrategy => ({
      file: 'reader.ts',
      params: {},
      strategy: defineStrategy({
        name,
        params: z.object({}),
        on: {
          'rebalance.announced': (e, ctx) => {
            for (let i = 0; i < 100; i++) {
              const p = ctx.state.get<typeof plan>('plan')!;
              // Changing what was read changes nothing committed: the next read is as stored.
              p.n = 99;
              p.tokens.push('C');
              p.nested.sold = true;
            }
            reads.push({ seq: e.seq, plan: ctx.state.get('plan'), count: ctx.state.get('count') ?? null });
            ctx.state.set('count', e.seq);
            if (e.seq === 2) throw new Error('fails after writing');
          },
        },
      }),
    });
    const parsed = { plan: 0 };
    const parse = JSON.parse;
    JSON.parse = (text: string, reviver?: Parameters<typeof parse>[1]) => {
      if (text === planText) parsed.plan++;
      return parse(text, reviver);
    };
    try {
      await new StrategyRuntime({ store, strategies: [reader('reader')], maxAttempts: 1 }).drain();
    } finally {
      JSON.parse = parse;
    }
    // 300 reads over three events, one parse (the store's own read at start is of its row, before the runtime's copy).
    expect(parsed.plan).toBeLessThanOrEqual(2);
    expect(reads).toEqual([
      { seq: 1, plan, count: null },
      { seq: 2, plan, count: 1 },
      // Event 2 failed: its write was rolled back.
      { seq: 3, plan, count: 1 },
    ]);
    store.close();
    // A restart reads the same state from the file.
    store = SnapshotStore.open(path);
    store.appendEvents([announced(4)]);
    reads.length = 0;
    await new StrategyRuntime({ store, strategies: [reader('reader')], maxAttempts: 1 }).drain();
    expect(reads).toEqual([{ seq: 4, plan, count: 3 }]);
    expect(Object.fromEntries(store.strategies.stateEntries('reader'))).toEqual({ plan, count: 4 });
    store.close();
  });

  it("memoryOnly: state, book and fills are the runtime's alone, none written to the store, and the same as a stored run", async () => {
    const buyer = (): LoadedStrategy => ({
      file: 'buyer.ts',
      params: {},
      strategy: defineStrategy({
        name: 'buyer',
        params: z.object({}),
        on: {
          'performance.updated': async (event, ctx) => {
            ctx.state.set('last', event.payload.nav);
            await ctx.broker.buy({ instrument: { kind: 'index', indexId: 'sindex' }, notionalUsd: 10 });
          },
        },
      }),
    });
    const run = async (memoryOnly: boolean) => {
      const store = SnapshotStore.open(tempDbPath());
      store.appendEvents([perf(1, T0 + 1), perf(2, T0 + 2)]);
      const fills: unknown[] = [];
      const runtime = new StrategyRuntime({
        store,
        market: { ...store, navAt: (_i: string, at: number) => ({ nav: 100, asOf: at }) } as never,
        strategies: [buyer()],
        clock: new ManualClock(T0 + 5),
        memoryOnly,
        onFill: (_s, f) => fills.push(f),
      });
      await runtime.drain();
      const stored = { state: store.strategies.stateEntries('buyer').size, fills: store.strategies.fills('strategy:buyer').length, cursor: store.cursor(consumerOf('buyer')) };
      store.close();
      return { state: Object.fromEntries(runtime.state('buyer')!), book: runtime.book('buyer'), fills, stored };
    };
    const memory = await run(true);
    const stored = await run(false);
    // The cursor lives in the event log, which moves either way.
    expect(memory.stored).toEqual({ state: 0, fills: 0, cursor: 2 });
    expect(stored.stored).toEqual({ state: 1, fills: 2, cursor: 2 });
    expect(memory.state).toEqual({ last: 1002 });
    expect(memory.fills).toHaveLength(2);
    expect({ ...memory, stored: null }).toEqual({ ...stored, stored: null });
  });

  it('passed() answers once the strategies are done with the event, not at a polling tick: a runner hands on its events one at a time', { timeout: 10_000 }, async () => {
    const store = SnapshotStore.open(tempDbPath());
    const { runtime } = await runtimeFor('counting', store);
    await handOnOneByOne(store, runtime, 50, (seq) => expect(store.cursor(consumerOf('counting'))).toBe(seq));
    store.close();
  });

  it('passed() does not wait for a strategy backing off between tries of a failed event: a broken strategy holds up no other on a runner', { timeout: 10_000 }, async () => {
    const store = SnapshotStore.open(tempDbPath());
    const seen: number[] = [];
    const strategies: LoadedStrategy[] = [
      { file: 'counts.ts', params: {}, strategy: defineStrategy({ name: 'counts', params: z.object({}), on: { 'rebalance.announced': (e) => void seen.push(e.seq) } }) },
      {
        file: 'broken.ts',
        params: {},
        strategy: defineStrategy({
          name: 'broken',
          params: z.object({}),
          on: {
            'rebalance.announced': () => {
              throw new Error('broken');
            },
          },
        }),
      },
    ];
    // Each failed try waits a minute before the next: no timer fires here, so only the exemption lets the runner go on.
    const runtime = new StrategyRuntime({ store, strategies, maxAttempts: 3, retryBaseMs: 60_000, startedAt: T0 + 1_000 });
    await handOnOneByOne(store, runtime, 5, undefined, () => {
      expect(seen).toEqual([1, 2, 3, 4, 5]);
      // The broken one is still on its first event, between tries; nothing of it was parked or skipped.
      expect(store.cursor(consumerOf('broken'))).toBe(0);
      expect(store.strategies.parked('broken')).toEqual([]);
    });
    store.close();
  });
});
