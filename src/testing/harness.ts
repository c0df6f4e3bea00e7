import { createHash } from 'node:crypto';
import type { z } from 'zod';
import type { SnapshotKind, SnapshotValues } from '../api/index.ts';
import type { Composition, HistoryPoint, Rebalance } from '../contract/index.ts';
import type { Clock } from '../core/index.ts';
import { systemClock } from '../core/index.ts';
import type { IndexbotEvent } from '../detect/index.ts';
import { SnapshotStore, storeSnapshotRows } from '../store/index.ts';
import { type Fill, type MarketQueries, type PaperBrokerOptions, type Rejection, type Strategy, StrategyRuntime, withParams } from '../strategy/index.ts';

export interface StrategyRunOptions<S extends z.ZodType = z.ZodType> {
  strategy: Strategy<S>;
  /** Delivered in order, each at its `detectedAt` (what `ctx.clock.now()` returns in its handler). */
  events: readonly IndexbotEvent[];
  /** Params as the strategy's schema takes them (defaults may be left out), validated as a config's would be. @default {} */
  params?: z.input<S> | undefined;
  /** Token prices in USD the paper broker fills at and `ctx.data.tokenPrice` returns: by address, or a function of address and time. */
  prices?: Record<string, number> | ((address: string, at: number) => number | undefined);
  /** Index values (NAV of one unit) by index id; an index it does not name is valued from the cache's history points, as of the event's time. */
  indexValues?: Record<string, number> | undefined;
  /**
   * What the cache holds, as the API returns it: compositions and rebalancing records, each
   * with the time (ms) it was fetched, as the poller stores them, and history points as a
   * backfill stores them. `ctx.data` reads them as it reads a live cache (a handler sees only
   * what was known by its event's time: a composition as of its `as_of`, a rebalancing record
   * from when it was fetched), and the paper broker takes a composition's token prices where
   * `prices` names none, and history points' values for an index `indexValues` does not name.
   */
  cache?: {
    compositions?: readonly { at: number; data: Composition }[];
    rebalancing?: readonly { at: number; indexId: string; data: readonly Rebalance[] }[];
    history?: readonly { indexId: string; interval?: '1h' | '1d'; points: readonly HistoryPoint[] }[];
  };
  /** State the strategy starts with, as if committed by earlier events. */
  state?: Record<string, unknown> | undefined;
  /** @default 10000 USD cash, 10 bps fee, 5 bps slippage */
  paper?: PaperBrokerOptions | undefined;
  /** Attempts before an event is parked. @default 1: a test's handler fails the same way each time */
  maxAttempts?: number | undefined;
  /** Handler time limit in real ms. @default the strategy's, else 5000 */
  timeoutMs?: number | undefined;
}

export interface StrategyRunResult {
  /** Paper fills in order, each with the id of the event whose handler made it. */
  fills: (Fill & { eventId: string })[];
  /** Orders the paper broker refused (no price, not enough cash or position), each with the id of the event whose handler placed it. */
  rejections: (Rejection & { eventId: string })[];
  /** The strategy's committed state after the last event. */
  state: Record<string, unknown>;
  alerts: { message: string; data: unknown }[];
  /** Events whose handler failed every attempt, with the last error. */
  parked: { eventId: string; error: string }[];
  /** Views of the exact ledger: the nearest doubles to the amounts the broker keeps. */
  cash: number;
  positions: { instrument: string; quantity: number; costUsd: number }[];
}

/**
 * Runs one strategy over a list of events as the daemon would (the same runtime, buffered
 * state, paper broker and parking), against an in-memory cache; nothing touches the disk.
 */
export async function runStrategy<S extends z.ZodType>(o: StrategyRunOptions<S>): Promise<StrategyRunResult> {
  const loaded = withParams(o.strategy as unknown as Strategy, `strategy "${o.strategy.name}"`, o.params ?? {});
  const store = SnapshotStore.open(':memory:');
  try {
    let now = o.events[0]?.detectedAt ?? 0;
    const clock: Clock = { ...systemClock, now: () => now };
    const prices = o.prices;
    const tokenPrice = typeof prices === 'function' ? prices : (address: string) => prices?.[address];
    const market: MarketQueries = {
      compositionAt: (indexId, at) => store.compositionAt(indexId, at),
      rebalancesAt: (indexId, at) => store.rebalancesAt(indexId, at),
      historyBetween: (indexId, interval, from, to) => store.historyBetween(indexId, interval, from, to),
      navAt: (indexId, at) => {
        const nav = o.indexValues?.[indexId];
        return nav === undefined ? store.navAt(indexId, at) : { nav, asOf: at };
      },
      tokenPriceAt: (address, at) => {
        const priceUsd = tokenPrice(address, at);
        return priceUsd === undefined ? store.tokenPriceAt(address, at) : { priceUsd, asOf: at };
      },
    };
    if (o.cache) fillCache(store, o.cache);
    for (const [key, value] of Object.entries(o.state ?? {})) store.strategies.setState(o.strategy.name, key, JSON.stringify(value));
    const fills: StrategyRunResult['fills'] = [];
    const alerts: StrategyRunResult['alerts'] = [];
    const rejections: StrategyRunResult['rejections'] = [];
    const runtime = new StrategyRuntime({
      store,
      market,
      strategies: [loaded],
      clock,
      startedAt: Number.NEGATIVE_INFINITY,
      paper: o.paper,
      maxAttempts: o.maxAttempts ?? 1,
      timeoutMs: o.timeoutMs,
      onFill: (_s, fill, eventId) => fills.push({ ...fill, eventId }),
      onReject: (_s, rejection, eventId) => rejections.push({ ...rejection, eventId }),
      onAlert: (_s, message, data) => alerts.push({ message, data }),
    });
    for (const event of o.events) {
      now = event.detectedAt;
      const { seq: _seq, ...unstored } = event;
      // As the poller stores the performance a live event is detected on: the index is priced at its NAV (trial 34: orders for it were refused, no_price).
      // A hand-built event may lack a field the factory fills: it is then as of its detection, with no returns, or prices nothing.
      const p = event.payload as { nav?: unknown; returns?: Record<string, number | null>; asOf?: unknown };
      if (event.type === 'performance.updated' && typeof p.nav === 'number') {
        const asOf = typeof p.asOf === 'number' ? p.asOf : event.detectedAt;
        store.transaction(() =>
          storeResponse(store, 'performance', event.indexId, event.detectedAt, {
            index_id: event.indexId,
            as_of: new Date(asOf).toISOString(),
            nav: p.nav,
            returns: p.returns ?? {},
          } as SnapshotValues['performance']),
        );
      }
      store.appendEvents([unstored]);
      await runtime.drain();
    }
    const book = runtime.book(o.strategy.name)!;
    return {
      fills,
      rejections,
      state: Object.fromEntries(store.strategies.stateEntries(o.strategy.name)),
      alerts,
      parked: store.strategies.parked(o.strategy.name).map((p) => ({ eventId: p.eventId, error: p.error })),
      cash: book.cash,
      positions: book.positions,
    };
  } finally {
    store.close();
  }
}

/** A response stored as the poller stores it, fetched at `at`: the snapshot and its rows. */
function storeResponse<K extends SnapshotKind>(store: SnapshotStore, endpoint: K, indexId: string, at: number, value: SnapshotValues[K]): void {
  const raw = JSON.stringify(value);
  const asOf = (value as { as_of?: string }).as_of;
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 32);
  const id = store.insertSnapshot({ endpoint, indexId, fetchedAt: at, asOf: asOf === undefined ? null : Date.parse(asOf), hash, raw, status: 'accepted' });
  storeSnapshotRows(store, endpoint, value, id, at);
}

/** Stores the responses and points as the poller and a backfill would, rows and all. */
function fillCache(store: SnapshotStore, cache: NonNullable<StrategyRunOptions['cache']>): void {
  store.transaction(() => {
    for (const c of cache.compositions ?? []) storeResponse(store, 'composition', c.data.index_id, c.at, c.data);
    for (const r of cache.rebalancing ?? []) storeResponse(store, 'rebalancing', r.indexId, r.at, [...r.data]);
    for (const h of cache.history ?? []) store.history.insertPoints(h.indexId, h.interval ?? '1h', h.points);
  });
}
