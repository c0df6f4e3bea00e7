import { describe, expectTypeOf, it } from 'vitest';
import type { Fill, RebalanceAnnounced, Rejection } from 'indexbot';
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
});
