import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { type EventOf, type IndexbotEvent, type OrderResult, type Strategy, type StrategyContext, defineStrategy, describeEvent } from 'indexbot';

describe('indexbot (what a strategy file imports)', () => {
  it('accepts a strategy without params, whose handlers see empty params', () => {
    const s = defineStrategy({
      name: 'no-params',
      on: {
        'performance.updated': (event, ctx) => {
          expectTypeOf(event.payload.nav).toEqualTypeOf<number>();
          expectTypeOf(ctx.params).toEqualTypeOf<Readonly<Record<string, never>>>();
        },
      },
    });
    expectTypeOf(s).toMatchTypeOf<Strategy>();
  });

  it('types params from the schema and orders through the broker', () => {
    defineStrategy({
      name: 'typed',
      params: z.object({ usd: z.number().default(100) }),
      on: {
        'rebalance.announced': async (event, ctx) => {
          expectTypeOf(event).toEqualTypeOf<EventOf<'rebalance.announced'>>();
          expectTypeOf(ctx.params.usd).toEqualTypeOf<number>();
          expectTypeOf(await ctx.broker.buy({ instrument: { kind: 'token', address: 'a' }, notionalUsd: ctx.params.usd })).toEqualTypeOf<OrderResult>();
        },
      },
    });
  });

  it('rejects a handler for an event type that does not exist, and params that are not a schema', () => {
    // @ts-expect-error no such event type
    defineStrategy({ name: 'x', on: { 'rebalance.announce': () => {} } });
    // @ts-expect-error params must be a zod schema
    defineStrategy({ name: 'x', params: { usd: 1 }, on: {} });
  });

  it('describes any event in one line', () => {
    expectTypeOf(describeEvent).parameter(0).toEqualTypeOf<IndexbotEvent>();
    expectTypeOf(describeEvent).returns.toEqualTypeOf<string>();
    expectTypeOf<StrategyContext<{ a: number }>['params']>().toEqualTypeOf<Readonly<{ a: number }>>();
  });
});
