import { describe, expectTypeOf, it } from 'vitest';
import type { ApiError, Composition, ErrorCode, IndexClient, IndexbotError, RedisBudgets, StoreError, Page, PageIterator, Rebalance, RateGateState, RateLimitError, Tier } from 'indexbot/client';

describe('indexbot/client', () => {
  it('resolves through the package exports self-reference', () => {
    expectTypeOf<RateLimitError>().toMatchTypeOf<ApiError>();
    expectTypeOf<ApiError>().toMatchTypeOf<IndexbotError>();
    expectTypeOf<RateLimitError['status']>().toEqualTypeOf<number>();
    // A union of the stable codes (trial 36: a string, so a switch on it caught no typo).
    expectTypeOf<IndexbotError['code']>().toEqualTypeOf<ErrorCode>();
    expectTypeOf<'STORE_FOREIGN'>().toMatchTypeOf<ErrorCode>();
    expectTypeOf<'STORE_FOREING'>().not.toMatchTypeOf<ErrorCode>();
    expectTypeOf<RateLimitError['code']>().toMatchTypeOf<ApiError['code']>();
    expectTypeOf<StoreError['code']>().toEqualTypeOf<'STORE_SCHEMA_NEWER' | 'STORE_LOCKED' | 'STORE_UNAVAILABLE' | 'STORE_FOREIGN'>();
    // The README's `sharedBudgets: new RedisBudgets({ url })`.
    expectTypeOf<ConstructorParameters<typeof RedisBudgets>[0]['url']>().toEqualTypeOf<string>();
  });

  it('types every endpoint by its record', () => {
    expectTypeOf<IndexClient['getComposition']>().returns.resolves.toEqualTypeOf<Composition>();
    expectTypeOf<IndexClient['listRebalancing']>().returns.resolves.toEqualTypeOf<Page<Rebalance>>();
    expectTypeOf<IndexClient['iterateRebalancing']>().returns.toEqualTypeOf<PageIterator<Rebalance>>();
    expectTypeOf<IndexClient['rateGates']>().returns.toEqualTypeOf<RateGateState[]>();
  });

  it('keeps enum autocomplete while admitting values the server may add', () => {
    expectTypeOf<'announced'>().toMatchTypeOf<Rebalance['status']>();
    expectTypeOf<'postponed'>().toMatchTypeOf<Rebalance['status']>();
    expectTypeOf<Composition['constituents'][number]['weight']>().toEqualTypeOf<number>();
    // Fields our contract adds may be missing on a live server: optional to the client.
    expectTypeOf<Composition['constituents'][number]['units']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<Composition['rebalance_id']>().toEqualTypeOf<string | null | undefined>();
  });

  it('names the tiers of the spec', () => {
    expectTypeOf<Tier>().toEqualTypeOf<'public' | 'standard' | 'basic' | 'premium' | 'enterprise'>();
  });
});
