import type { z } from 'zod';
import type { Rebalance } from '../contract/index.ts';
import type { Logger } from '../core/index.ts';
import type { EventOf, EventType } from '../detect/index.ts';
import type { Broker } from './broker.ts';

/** Read-only views of the cache. Nothing stamped after `clock.now()` is ever returned. */
export interface MarketData {
  /** The latest composition known at now. */
  composition(indexId: string): { asOf: number; constituents: { address: string; symbol: string; weight: number; targetWeight: number; priceUsd: number; units: number | null }[] } | undefined;
  /** The index value (NAV of one unit) at now. */
  indexValue(indexId: string): number | undefined;
  tokenPrice(address: string): number | undefined;
  /** Rebalancing records announced by now, newest first, with the status known at now. */
  rebalances(
    indexId: string,
    filter?: { status?: 'announced' | 'completed' | 'cancelled' },
  ): {
    id: string;
    status: Rebalance['status'];
    announcedAt: number;
    effectiveAt: number;
    changes: { address: string; symbol: string; action: Rebalance['changes'][number]['action']; oldWeight: number; newWeight: number }[];
  }[];
  /** Cached history points in [from, now]. */
  history(indexId: string, query: { from: number; interval?: '1h' | '1d' }): { ts: number; nav: number }[];
}

/** Persistent key-value state, committed together with the event that changed it. Values are JSON. */
export interface StrategyState {
  get<T = unknown>(key: string): T | undefined;
  set(key: string, value: unknown): void;
  delete(key: string): void;
  keys(): string[];
}

export interface StrategyContext<P> {
  /** The strategy's params, validated by its schema. */
  params: Readonly<P>;
  /** Logs with the strategy's name. */
  log: Logger;
  /** The bot's clock: real time live, simulated time in a backtest. */
  clock: { now(): number };
  /** True when the event was logged before this run started (missed while down, delivered now). */
  replayed: boolean;
  data: MarketData;
  state: StrategyState;
  /** A message for people: logged, stored with the event, and sent to the alert sinks (see their `strategyAlerts` filter). */
  alert(message: string, data?: unknown): void;
  broker: Broker;
}

export type Handler<T extends EventType, P> = (event: EventOf<T>, ctx: StrategyContext<P>) => void | Promise<void>;
export type Handlers<P> = { [T in EventType]?: Handler<T, P> };

/** The params of a strategy that declares none. */
export type NoParams = z.ZodObject<Record<never, never>, z.core.$strict>;

export interface StrategyDefinition<S extends z.ZodType = NoParams> {
  /** Lowercase slug, unique among the loaded strategies; names its state, account and cursor. */
  name: string;
  description?: string | undefined;
  /** zod schema of the params; its output type is what handlers see as `ctx.params`. @default none (`{}`) */
  params?: S | undefined;
  /** Indexes whose events reach the handlers. @default 'all' */
  indexes?: readonly string[] | 'all' | undefined;
  /** Per-handler time limit. @default 5000 */
  timeoutMs?: number | undefined;
  on: Handlers<z.output<S>>;
}

const BRAND = Symbol.for('indexbot.strategy');

export type Strategy<S extends z.ZodType = z.ZodType> = StrategyDefinition<S> & { readonly [BRAND]: true };

/** Declares a strategy: `export default defineStrategy({ name, params, on: { 'rebalance.announced': handler } })`. */
export function defineStrategy<S extends z.ZodType = NoParams>(definition: StrategyDefinition<S>): Strategy<S> {
  return Object.freeze({ ...definition, [BRAND]: true as const });
}

export function isStrategy(value: unknown): value is Strategy {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}
