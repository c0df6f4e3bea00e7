import { describe, expect, it } from 'vitest';
import { type Logger, silentLogger } from '../../src/core/index.ts';
import type { NewEvent } from '../../src/detect/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { StrategyRuntime, consumerOf, loadStrategies } from '../../src/strategy/index.ts';
import { captureLogger } from '../helpers/fake-transport.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const T0 = Date.UTC(2026, 10, 22, 10);
const announced = (i: number): NewEvent => ({
  id: `rebalance.announced:sindex:rb_${i}`,
  type: 'rebalance.announced',
  indexId: 'sindex',
  occurredAt: T0 + i,
  detectedAt: T0 + i,
  payload: { rebalanceId: `rb_${i}`, announcedAt: T0, effectiveAt: T0 + 3_600_000, reason: 'manual', changes: [] },
});

async function runtimeOn(store: SnapshotStore, logger: Logger = silentLogger) {
  const strategies = await loadStrategies('test/fixtures/strategies/counting', { logger: silentLogger });
  return new StrategyRuntime({ store, strategies, retryBaseMs: 1, startedAt: T0, logger });
}

describe('pausing a strategy', () => {
  it('holds its events while paused, across a restart, and resume delivers each once', async () => {
    const path = tempDbPath();
    let store = SnapshotStore.open(path);
    store.appendEvents([announced(1)]);
    let runtime = await runtimeOn(store);
    await runtime.drain();
    expect(runtime.pause('counting')).toBe(true);
    expect(runtime.pause('counting')).toBe(false);
    store.appendEvents([announced(2), announced(3)]);
    await runtime.drain();
    expect(store.cursor(consumerOf('counting'))).toBe(1);
    expect(store.strategies.stateEntries('counting').get('count')).toBe(1);
    store.close();

    // A restart keeps it paused: the paused set lives in the store.
    store = SnapshotStore.open(path);
    runtime = await runtimeOn(store);
    expect(runtime.paused()).toEqual(['counting']);
    await runtime.drain();
    expect(store.cursor(consumerOf('counting'))).toBe(1);

    expect(runtime.resume('counting')).toBe(true);
    await runtime.drain();
    await runtime.drain();
    const state = store.strategies.stateEntries('counting');
    expect(state.get('seen')).toEqual(['rebalance.announced:sindex:rb_1', 'rebalance.announced:sindex:rb_2', 'rebalance.announced:sindex:rb_3']);
    expect(runtime.paused()).toEqual([]);
    store.close();
  });

  it('logs each pause and resume, whoever asked (trial 35: no line)', async () => {
    const path = tempDbPath();
    let store = SnapshotStore.open(path);
    const first = captureLogger();
    let runtime = await runtimeOn(store, first.logger);
    runtime.pause('counting');
    runtime.pause('counting');
    expect(first.lines.filter((l) => l.includes('"msg":"strategy paused: its events wait in the log"') && l.includes('"strategy":"counting"'))).toHaveLength(1);
    store.close();
    store = SnapshotStore.open(path);
    const second = captureLogger();
    runtime = await runtimeOn(store, second.logger);
    runtime.resume('counting');
    expect(second.lines.filter((l) => l.includes('"msg":"strategy resumed: it is given the events that waited"'))).toHaveLength(1);
    store.close();
  });

  it('wakes a running loop on resume, and names an unknown strategy', async () => {
    const store = SnapshotStore.open(tempDbPath());
    const runtime = await runtimeOn(store);
    runtime.pause('counting');
    runtime.start();
    store.appendEvents([announced(1)]);
    runtime.notify();
    await new Promise((r) => setTimeout(r, 50));
    expect(store.cursor(consumerOf('counting'))).toBe(0);
    runtime.resume('counting');
    for (let i = 0; i < 50 && store.cursor(consumerOf('counting')) === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(store.cursor(consumerOf('counting'))).toBe(1);
    expect(() => runtime.pause('nope')).toThrow(/no strategy named "nope" is running \(running: counting\)/);
    await runtime.stop();
    store.close();
  });
});
