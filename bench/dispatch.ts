/**
 * Events per second through the strategy runtime: to a no-op strategy, and to each example
 * strategy on a mix of the events they handle (announced and completed rebalances, drift,
 * performance). An event whose handler has effects (state, orders, alerts) commits them with
 * its cursor move in one transaction; an effect-free event only moves the cursor, which is
 * committed once per batch of up to 500 events (or with the next event that has effects).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { NewEvent } from '../src/detect/index.ts';
import { SnapshotStore } from '../src/store/index.ts';
import { type LoadedStrategy, StrategyRuntime, defineStrategy, loadStrategies } from '../src/strategy/index.ts';
import { silentLogger } from '../src/core/index.ts';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const T0 = Date.UTC(2026, 0, 1);
const TOKENS = Array.from({ length: 10 }, (_, i) => ({ address: `Mint${i}x`.padEnd(44, '1'), symbol: `T${i}` }));

function events(n: number): NewEvent[] {
  return Array.from({ length: n }, (_, i): NewEvent => {
    const at = T0 + i * 1_000;
    const changes = TOKENS.slice(0, 4).map((t, k) => ({ address: t.address, symbol: t.symbol, action: 'increase' as const, oldWeight: 0.1, newWeight: 0.12 + k * 0.01 }));
    switch (i % 4) {
      case 0:
        return {
          id: `a:${i}`,
          type: 'rebalance.announced',
          indexId: 'bench',
          occurredAt: at,
          detectedAt: at,
          payload: { rebalanceId: `rb${i}`, announcedAt: at, effectiveAt: at + 3_600_000, reason: 'scheduled', changes },
        };
      case 1:
        return {
          id: `c:${i}`,
          type: 'rebalance.completed',
          indexId: 'bench',
          occurredAt: at,
          detectedAt: at,
          payload: { rebalanceId: `rb${i - 1}`, effectiveAt: at, before: {}, after: {}, changes, added: [], removed: [], source: 'rebalancing' },
        };
      case 2: {
        const t = TOKENS[i % TOKENS.length]!;
        return {
          id: `d:${i}`,
          type: 'composition.drift',
          indexId: 'bench',
          occurredAt: at,
          detectedAt: at,
          payload: { address: t.address, symbol: t.symbol, weight: 0.05, target: 0.1, deviation: -0.05, threshold: 0.02 },
        };
      }
      default:
        return { id: `p:${i}`, type: 'performance.updated', indexId: 'bench', occurredAt: at, detectedAt: at, payload: { nav: 1000, returns: {}, asOf: at } };
    }
  });
}

const noop: LoadedStrategy = {
  file: 'bench',
  params: {},
  strategy: defineStrategy({
    name: 'noop',
    params: z.object({}),
    on: { 'rebalance.announced': () => {}, 'rebalance.completed': () => {}, 'composition.drift': () => {}, 'performance.updated': () => {} },
  }),
};

async function measure(strategy: LoadedStrategy): Promise<{ perSecond: number; fills: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'indexbot-dispatch-'));
  const store = SnapshotStore.open(join(dir, 'bench.db'));
  // Prices for the paper broker: one composition listing every token.
  const sid = store.insertSnapshot({ endpoint: 'composition', indexId: 'bench', fetchedAt: T0, asOf: T0, hash: 'h', raw: '{}', status: 'accepted' });
  store.insertComposition(sid, {
    index_id: 'bench',
    as_of: new Date(T0).toISOString(),
    rebalance_id: null,
    constituents: TOKENS.map((t) => ({ ...t, weight: 0.1, target_weight: 0.1, price_usd: 0.001 })),
  } as never);
  store.transaction(() => store.appendEvents(events(EVENTS)));
  let now = T0;
  const clock = { now: () => now, setTimeout: (f: () => void, ms: number) => setTimeout(f, ms), clearTimeout: (h: unknown) => clearTimeout(h as NodeJS.Timeout) };
  const runtime = new StrategyRuntime({ store, strategies: [strategy], clock, logger: silentLogger, paper: { initialCash: 1e12 } });
  now = T0 + EVENTS * 1_000;
  const t0 = performance.now();
  await runtime.drain();
  const seconds = (performance.now() - t0) / 1000;
  const fills = store.strategies.fillCount(`strategy:${strategy.strategy.name}`);
  store.close();
  rmSync(dir, { recursive: true, force: true });
  return { perSecond: EVENTS / seconds, fills };
}

export async function run(): Promise<void> {
  console.log(`dispatch: ${EVENTS} events; one transaction per event with effects (its state, orders and cursor), the cursor of effect-free events once per batch of up to 500`);
  const examples = await loadStrategies('strategies', { logger: silentLogger });
  const only = process.env.BENCH_ONLY;
  for (const s of [noop, ...examples].filter((x) => !only || x.strategy.name === only)) {
    const r = await measure(s);
    console.log(`  ${s.strategy.name.padEnd(22)} ${r.perSecond.toFixed(0).padStart(7)} events/s  (${r.fills} paper fills)`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
