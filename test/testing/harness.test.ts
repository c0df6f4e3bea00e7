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

  it("the template waits for a token's first price without placing orders the broker refuses, and the result lists refusals", async () => {
    const at = (h: number) => Date.UTC(2026, 0, 1, h);
    const events = [rebalanceAnnounced({ rebalanceId: 'rb_1', changes, at: at(0), effectiveAt: at(24) }), ...[1, 2, 3].map((h) => performanceUpdated({ nav: 1, at: at(h) }))];
    const waiting = await runStrategy({ strategy: followRebalance, params: { maxTokens: 1 }, events, prices: (address, t) => (address === 'TokenA' && t >= at(3) ? 2 : undefined) });
    expect(waiting.fills.map((f) => [f.instrument, f.at])).toEqual([['token:TokenA', at(3)]]);
    expect(waiting.rejections).toEqual([]);
    // A refusal is reported with the event whose handler placed the order.
    const broke = await runStrategy({ strategy: followRebalance, params: { maxTokens: 1, notionalUsd: 1e6 }, events: events.slice(0, 1), prices: { TokenA: 2 } });
    expect(broke.rejections.map((r) => [r.code, r.instrument, r.eventId])).toEqual([['insufficient_cash', 'token:TokenA', expect.stringContaining('rebalance.announced')]]);
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

describe('runStrategy with a cache', () => {
  const day = (d: number, h = 0) => Date.UTC(2026, 0, d, h);
  const iso = (ms: number) => new Date(ms).toISOString();
  const composition = (at: number, priceA: number) => ({
    at,
    data: {
      index_id: 'sindex',
      as_of: iso(at),
      constituents: [
        { address: 'TokenA', symbol: 'A', weight: 0.6, target_weight: 0.6, price_usd: priceA },
        { address: 'TokenB', symbol: 'B', weight: 0.4, target_weight: 0.4, price_usd: 1 },
      ],
    },
  });
  const reader = defineStrategy({
    name: 'reader',
    on: {
      'rebalance.announced': async (event, ctx) => {
        const held = ctx.data.composition(event.indexId);
        ctx.state.set(event.payload.rebalanceId, {
          top: held?.constituents[0]?.symbol,
          asOf: held?.asOf,
          rebalances: ctx.data.rebalances(event.indexId).map((r) => r.id),
          history: ctx.data.history(event.indexId, { from: day(1) }).map((p) => p.nav),
        });
        await ctx.broker.buy({ instrument: { kind: 'token', address: 'TokenA', symbol: 'A' }, notionalUsd: 100 });
      },
    },
  });

  it('ctx.data reads the compositions, rebalancing records and history given, each from the time it was fetched, and the broker fills at the composition price', async () => {
    const record = { id: 'rb_0', index_id: 'sindex', status: 'completed', announced_at: iso(day(1)), effective_at: iso(day(1, 6)), changes: [] };
    const result = await runStrategy({
      strategy: reader,
      events: [rebalanceAnnounced({ rebalanceId: 'rb_1', changes, at: day(2) }), rebalanceAnnounced({ rebalanceId: 'rb_2', changes, at: day(4) })],
      cache: {
        compositions: [composition(day(1), 2), composition(day(3), 4)],
        rebalancing: [{ at: day(1, 7), indexId: 'sindex', data: [record] }],
        history: [{ indexId: 'sindex', points: [day(1), day(2), day(3)].map((t, i) => ({ timestamp: iso(t), nav: 100 + i })) }],
      },
      paper: { initialCash: 1_000, feeBps: 0, slippageBps: 0 },
    });
    expect(result.state).toEqual({
      rb_1: { top: 'A', asOf: day(1), rebalances: ['rb_0'], history: [100, 101] },
      rb_2: { top: 'A', asOf: day(3), rebalances: ['rb_0'], history: [100, 101, 102] },
    });
    expect(result.fills.map((f) => f.price)).toEqual([2, 4]);
  });

  it('values index units from the history points given, as of each event, as a backtest does', async () => {
    const unitBuyer = defineStrategy({
      name: 'unit-buyer',
      on: {
        'performance.updated': async (event, ctx) => {
          ctx.state.set(String(event.detectedAt), ctx.data.indexValue(event.indexId) ?? null);
          await ctx.broker.buy({ instrument: { kind: 'index', indexId: event.indexId }, notionalUsd: 100 });
        },
      },
    });
    const result = await runStrategy({
      strategy: unitBuyer,
      events: [performanceUpdated({ nav: 101, at: day(2, 1) }), performanceUpdated({ nav: 102, at: day(3, 1) })],
      cache: { history: [{ indexId: 'sindex', points: [day(1), day(2), day(3)].map((t, i) => ({ timestamp: iso(t), nav: 100 + i })) }] },
      paper: { initialCash: 1_000, feeBps: 0, slippageBps: 0 },
    });
    // Before, only indexValues priced an index: the value was undefined and each buy refused with no_price.
    expect(result.state).toEqual({ [String(day(2, 1))]: 101, [String(day(3, 1))]: 102 });
    expect(result.rejections).toEqual([]);
    expect(result.fills.map((f) => f.price)).toEqual([101, 102]);
    // With no history given, a performance event prices its index at its own NAV, as the poll a live one is detected on does (trial 34: refused, no_price).
    const alone = await runStrategy({
      strategy: unitBuyer,
      events: [performanceUpdated({ nav: 50, at: day(2, 1) }), performanceUpdated({ nav: 55, at: day(3, 1) })],
      paper: { initialCash: 1_000, feeBps: 0, slippageBps: 0 },
    });
    expect(alone.rejections).toEqual([]);
    expect(alone.fills.map((f) => f.price)).toEqual([50, 55]);
    expect(alone.state).toEqual({ [String(day(2, 1))]: 50, [String(day(3, 1))]: 55 });
    // Built by hand without asOf or returns: as of its detection (the review: it threw).
    const handBuilt = { ...performanceUpdated({ nav: 60, at: day(4, 1) }), payload: { nav: 60 } } as unknown as ReturnType<typeof performanceUpdated>;
    const bare = await runStrategy({ strategy: unitBuyer, events: [handBuilt], paper: { initialCash: 1_000, feeBps: 0, slippageBps: 0 } });
    expect(bare.fills.map((f) => f.price)).toEqual([60]);
  });
});
