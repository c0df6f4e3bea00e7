import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { Rebalance } from 'indexbot/client';
import { type Broker, type MarketData, type RebalanceAnnounced, type RebalanceCompleted, type StrategyContext, defineStrategy } from 'indexbot';

describe('defineStrategy', () => {
  it('gives each handler exactly its event type and the params output type', () => {
    defineStrategy({
      name: 'typed',
      params: z.object({ notionalUsd: z.number().default(100), label: z.string().optional() }),
      on: {
        'rebalance.announced': (event, ctx) => {
          expectTypeOf(event).toEqualTypeOf<RebalanceAnnounced>();
          expectTypeOf(event.payload.effectiveAt).toEqualTypeOf<number>();
          expectTypeOf(ctx.params).toEqualTypeOf<Readonly<{ notionalUsd: number; label?: string | undefined }>>();
          expectTypeOf(ctx.broker).toEqualTypeOf<Broker>();
        },
        'rebalance.completed': (event) => {
          expectTypeOf(event).toEqualTypeOf<RebalanceCompleted>();
          expectTypeOf(event.payload.added).toEqualTypeOf<string[]>();
        },
      },
    });
  });

  it('rejects a handler for an event that does not exist, and a handler taking the wrong event', () => {
    defineStrategy({
      name: 'unknown-event',
      params: z.object({}),
      on: {
        // @ts-expect-error no such event type
        'rebalance.postponed': () => undefined,
      },
    });
    defineStrategy({
      name: 'wrong-event',
      params: z.object({}),
      on: {
        // @ts-expect-error a completed handler does not take an announced event
        'rebalance.completed': (_event: RebalanceAnnounced) => undefined,
      },
    });
  });

  it('types the context by its params', () => {
    expectTypeOf<StrategyContext<{ a: number }>['params']['a']>().toEqualTypeOf<number>();
  });

  it("names a rebalance's status and change actions as the client does: the known values complete, a new one from the server still fits (trial 36: string)", () => {
    type Record = ReturnType<MarketData['rebalances']>[number];
    expectTypeOf<'announced'>().toMatchTypeOf<Record['status']>();
    expectTypeOf<Record['status']>().toEqualTypeOf<Rebalance['status']>();
    expectTypeOf<Record['changes'][number]['action']>().toEqualTypeOf<Rebalance['changes'][number]['action']>();
    expectTypeOf<Record['changes'][number]['action']>().not.toEqualTypeOf<string>();
  });
});
