import { describe, expectTypeOf, it } from 'vitest';
import { type Fill, type RebalanceAnnounced, type Rejection, defineStrategy } from 'indexbot';
import { z } from 'zod';
import type { Composition } from 'indexbot/client';
import { ManualClock, type StrategyRunOptions, type StrategyRunResult, rebalanceAnnounced, runStrategy, testEvent } from 'indexbot/testing';

describe('indexbot/testing', () => {
  it('makes typed events and returns fills, state, alerts and parked events', () => {
    expectTypeOf(rebalanceAnnounced).returns.toEqualTypeOf<RebalanceAnnounced>();
    expectTypeOf(testEvent('performance.updated', { nav: 1, returns: {}, asOf: 0 }).payload.nav).toEqualTypeOf<number>();
    // @ts-expect-error the payload must match the type
    testEvent('performance.updated', { rebalanceId: 'x' });
    expectTypeOf(runStrategy).returns.resolves.toEqualTypeOf<StrategyRunResult>();
    expectTypeOf<StrategyRunResult['fills'][number]>().toMatchTypeOf<Fill>();
    expectTypeOf<StrategyRunResult['rejections'][number]>().toMatchTypeOf<Rejection & { eventId: string }>();
    expectTypeOf<StrategyRunResult['parked'][number]>().toEqualTypeOf<{ eventId: string; error: string }>();
    expectTypeOf(new ManualClock().now()).toEqualTypeOf<number>();
    // The cache takes the client's own record types, as the API returns them.
    expectTypeOf<NonNullable<StrategyRunOptions['cache']>['compositions']>().toEqualTypeOf<readonly { at: number; data: Composition }[] | undefined>();
  });

  it("takes params as the strategy's schema does: a default may be left out, a wrong type is an error", () => {
    const lookback = defineStrategy({ name: 'lookback', params: z.object({ lookback: z.number().int().default(24) }), on: {} });
    void runStrategy({ strategy: lookback, events: [], params: {} });
    void runStrategy({ strategy: lookback, events: [], params: { lookback: 12 } });
    // @ts-expect-error the schema takes a number (params was typed unknown: this failed only at run time)
    void runStrategy({ strategy: lookback, events: [], params: { lookback: 'x' } });
  });
});
