import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StrategyError } from '../../src/core/index.ts';
import { defineStrategy } from '../../src/strategy/index.ts';
import { performanceUpdated, rebalanceAnnounced, rebalanceCompleted, runStrategy } from '../../src/testing/index.ts';
import followRebalance from '../../templates/project/strategies/follow-rebalance.ts';

const changes = [
  { address: 'TokenA', symbol: 'A', action: 'add' as const, oldWeight: 0, newWeight: 0.1 },
  { address: 'TokenB', symbol: 'B', action: 'increase' as const, oldWeight: 0.1, newWeight: 0.15 },
  { address: 'TokenC', symbol: 'C', action: 'decrease' as const, oldWeight: 0.3, newWeight: 0.2 },
];

describe('runStrategy (indexbot/testing)', () => {
  it("runs the init template's strategy: buys on the announcement at its params, sells on completion", async () => {
    const result = await runStrategy({
      strategy: followRebalance,
      params: { notionalUsd: 100, maxTokens: 1 },
      events: [rebalanceAnnounced({ rebalanceId: 'rb_1', changes }), rebalanceCompleted({ rebalanceId: 'rb_1', changes, at: Date.UTC(2026, 0, 2) })],
      prices: (address, at) => (address === 'TokenA' ? (at < Date.UTC(2026, 0, 2) ? 2 : 3) : undefined),
      paper: { initialCash: 1_000, feeBps: 0, slippageBps: 0 },
    });
    expect(result.fills.map((f) => [f.side, f.instrument, f.quantity, f.price])).toEqual([
      ['buy', 'token:TokenA', 50, 2],
      ['sell', 'token:TokenA', 50, 3],
    ]);
    expect(result.fills.map((f) => f.eventId)).toEqual([expect.stringContaining('rebalance.announced'), expect.stringContaining('rebalance.completed')]);
    expect(result.cash).toBe(1_050);
    expect(result.positions).toEqual([]);
    expect(result.state).toEqual({});
  });

  it('returns committed state, alerts, and parked events with their errors', async () => {
    const strategy = defineStrategy({
      name: 'counter',
      params: z.object({ failAt: z.number() }),
      on: {
        'performance.updated': (event, ctx) => {
          if (event.payload.nav === ctx.params.failAt) throw new Error(`nav ${event.payload.nav} is cursed`);
          ctx.state.set('count', (ctx.state.get<number>('count') ?? 0) + 1);
          ctx.alert(`nav ${event.payload.nav} at ${ctx.clock.now()}`);
        },
      },
    });
    const events = [1, 2, 3].map((nav) => performanceUpdated({ nav, at: Date.UTC(2026, 0, nav) }));
    const result = await runStrategy({ strategy, params: { failAt: 2 }, events, state: { count: 10 } });
    expect(result.state).toEqual({ count: 12 });
    expect(result.alerts.map((a) => a.message)).toEqual([`nav 1 at ${Date.UTC(2026, 0, 1)}`, `nav 3 at ${Date.UTC(2026, 0, 3)}`]);
    expect(result.parked).toEqual([{ eventId: events[1]!.id, error: expect.stringContaining('Error: nav 2 is cursed') }]);
  });

  it('validates params as the config would', async () => {
    const strategy = defineStrategy({ name: 'strict', params: z.object({ usd: z.number().positive() }), on: {} });
    await expect(runStrategy({ strategy, params: { usd: -1 }, events: [] })).rejects.toBeInstanceOf(StrategyError);
  });
});
