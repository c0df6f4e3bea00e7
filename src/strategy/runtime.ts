import { type Clock, type Logger, StrategyError, silentLogger, sleep, systemClock } from '../core/index.ts';
import type { IndexbotEvent } from '../detect/index.ts';
import { type PaperPosition, type SnapshotStore, failureFields } from '../store/index.ts';
import type { Fill, Rejection } from './broker.ts';
import type { MarketData, StrategyContext, StrategyState } from './define.ts';
import type { LoadedStrategy } from './loader.ts';
import { type PaperBook, PaperBroker, type PaperBrokerOptions } from './paper-broker.ts';

/** Where the runtime reads events and keeps cursors: the store live, memory in a backtest. */
export type EventLog = Pick<SnapshotStore, 'eventsAfter' | 'cursor' | 'setCursor'>;

/** The cache queries behind `ctx.data` and the paper broker's prices, each cut at a time. */
export type MarketQueries = Pick<SnapshotStore, 'compositionAt' | 'navAt' | 'tokenPriceAt' | 'rebalancesAt' | 'historyBetween'>;

export interface RuntimeOptions {
  /** Strategy state, paper accounts, fills, alerts and parked events are kept here. */
  store: SnapshotStore;
  /** @default store */
  events?: EventLog;
  /** @default store */
  market?: MarketQueries;
  strategies: LoadedStrategy[];
  /** @default systemClock */
  clock?: Clock;
  /** @default silentLogger */
  logger?: Logger;
  /** Cash, fee and slippage of each strategy's paper account. */
  paper?: PaperBrokerOptions;
  /** Attempts per event before it is parked. @default 3 */
  maxAttempts?: number;
  /** First retry delay; doubles per attempt. @default 500 */
  retryBaseMs?: number;
  /** Handler time limit when the strategy sets none. @default 5000 */
  timeoutMs?: number;
  /** Events detected before this time are flagged replayed. @default the runtime's creation */
  startedAt?: number;
  onAlert?: (strategy: string, message: string, data: unknown) => void;
  /** Each committed fill, with the id of the event whose handler made it. */
  onFill?: (strategy: string, fill: Fill, eventId: string) => void;
  /** Each order the broker refused in a handler call that returned, with the event's id. */
  onReject?: (strategy: string, rejection: Rejection, eventId: string) => void;
}

export const consumerOf = (name: string) => `strategy:${name}`;
/** The runtime key under which the paused strategies' names are kept, so a restart keeps them paused. */
const PAUSED_KEY = 'pausedStrategies';

interface Book {
  cash: number;
  positions: Map<string, PaperPosition>;
}

/**
 * Delivers the event log to each strategy through its own cursor. Every call into user code
 * goes through one wrapper (`attempt`): the event is read-only, state writes and orders are
 * buffered, the handler is timed out, and only a handler that returned commits its state,
 * fills, alerts and the cursor move, in one transaction. A handler that keeps failing has
 * the event parked and the strategy goes on. Each strategy runs its own loop, so a slow or
 * broken one delays nobody.
 */
export class StrategyRuntime {
  private readonly runners: StrategyRunner[];
  private stopped = false;
  private loops: Promise<void>[] = [];
  private readonly pausedNames: Set<string>;

  constructor(private readonly o: RuntimeOptions) {
    const startedAt = o.startedAt ?? (o.clock ?? systemClock).now();
    this.pausedNames = new Set(o.store.runtime<string[]>(PAUSED_KEY)?.value ?? []);
    this.runners = o.strategies.map(
      (s) =>
        new StrategyRunner(
          s,
          o,
          startedAt,
          () => this.stopped,
          (name) => this.pausedNames.has(name),
        ),
    );
  }

  get names(): string[] {
    return this.runners.map((r) => r.name);
  }

  start(): void {
    this.loops = this.runners.map((r) => r.loop());
  }

  /** New events are in the log. */
  notify(): void {
    for (const r of this.runners) r.wake();
  }

  /** Delivers everything in the log now, without starting loops (backtests, commands, tests). */
  async drain(): Promise<void> {
    await Promise.all(this.runners.map((r) => r.drain()));
  }

  /** A strategy's paper cash and open positions as committed. */
  book(strategy: string): { cash: number; positions: PaperPosition[] } | undefined {
    const r = this.runners.find((x) => x.name === strategy);
    return r && { cash: r.committedBook.cash, positions: [...r.committedBook.positions.values()].filter((p) => p.quantity > 0) };
  }

  /** Names of the paused strategies. */
  paused(): string[] {
    return this.names.filter((n) => this.pausedNames.has(n));
  }

  /**
   * Stops delivering to a strategy after the event in hand: its cursor stands still and its
   * events wait in the log. Kept in the store, so a restart keeps it paused. Returns false
   * when it was paused already.
   */
  pause(name: string): boolean {
    return this.setPaused(this.runner(name), true);
  }

  /** Delivers to a paused strategy again, from its cursor: each waiting event once. */
  resume(name: string): boolean {
    const r = this.runner(name);
    const changed = this.setPaused(r, false);
    r.wake();
    return changed;
  }

  private setPaused(r: StrategyRunner, paused: boolean): boolean {
    if (this.pausedNames.has(r.name) === paused) return false;
    const next = new Set(this.pausedNames);
    if (paused) next.add(r.name);
    else next.delete(r.name);
    this.o.store.setRuntime(PAUSED_KEY, [...next].sort(), Date.now());
    if (paused) this.pausedNames.add(r.name);
    else this.pausedNames.delete(r.name);
    return true;
  }

  private runner(name: string): StrategyRunner {
    const r = this.runners.find((x) => x.name === name);
    if (!r) throw new StrategyError(`no strategy named "${name}" is running (running: ${this.names.join(', ') || 'none'})`, 'STRATEGY_UNKNOWN');
    return r;
  }

  /** Re-delivers parked events (all strategies, or one); returns how many succeeded. */
  async retryParked(strategy?: string): Promise<number> {
    let ok = 0;
    for (const r of this.runners) if (strategy === undefined || r.name === strategy) ok += await r.retryParked();
    return ok;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.notify();
    await Promise.allSettled(this.loops);
  }
}

class StrategyRunner {
  readonly name: string;
  private readonly consumer: string;
  private readonly account: string;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly maxAttempts: number;
  private readonly retryBaseMs: number;
  private readonly timeoutMs: number;
  private readonly events: EventLog;
  private readonly market: MarketQueries;
  /** Committed state as JSON text: reads parse a private copy, and a write of an equal value is no write. */
  private state: Map<string, string>;
  private book: Book;
  private wakeUp: (() => void) | undefined;
  /**
   * The last event whose handler changed nothing: its cursor move rides on the next commit
   * (or the end of the batch). Were we to crash before, it is only delivered again, which
   * at-least-once delivery allows, and it had no effect to repeat.
   */
  private uncommittedSeq: number | undefined;

  constructor(
    private readonly loaded: LoadedStrategy,
    private readonly o: RuntimeOptions,
    private readonly startedAt: number,
    private readonly isStopped: () => boolean,
    private readonly isPausedName: (name: string) => boolean,
  ) {
    this.name = loaded.strategy.name;
    this.consumer = consumerOf(this.name);
    this.account = `strategy:${this.name}`;
    this.clock = o.clock ?? systemClock;
    this.log = (o.logger ?? silentLogger).child({ strategy: this.name });
    this.maxAttempts = o.maxAttempts ?? 3;
    this.retryBaseMs = o.retryBaseMs ?? 500;
    this.timeoutMs = loaded.strategy.timeoutMs ?? o.timeoutMs ?? 5_000;
    this.events = o.events ?? o.store;
    this.market = o.market ?? o.store;
    const t = o.store.strategies;
    t.openAccount(this.account, o.paper?.initialCash ?? 10_000);
    this.state = new Map([...t.stateEntries(this.name)].map(([k, v]) => [k, JSON.stringify(v)]));
    this.book = { cash: t.account(this.account)!.cash, positions: new Map(t.positions(this.account).map((p) => [p.instrument, p])) };
  }

  private isHeld(): boolean {
    return this.isStopped() || this.isPausedName(this.name);
  }

  get committedBook(): Readonly<Book> {
    return this.book;
  }

  wake(): void {
    this.wakeUp?.();
  }

  async loop(): Promise<void> {
    let failures = 0;
    while (!this.isStopped()) {
      let delivered: number;
      try {
        delivered = await this.drain();
        failures = 0;
      } catch (e) {
        // The store refused a write (full disk, lock held too long): the transaction rolled
        // back and the committed state is untouched, so the same events are delivered again.
        failures++;
        const retryInMs = Math.min(60_000, this.retryBaseMs * 2 ** (failures - 1));
        this.log.error({ failures, retryInMs, error: failureFields(e) }, 'strategy could not record its progress; retrying');
        await this.rest(retryInMs);
        continue;
      }
      if (delivered === 0 && !this.isStopped()) await this.rest(1_000);
    }
  }

  /** Waits up to `ms`, or until new events are announced. */
  private async rest(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wakeUp = undefined;
  }

  /** Delivers what is in the log after the cursor; returns how many events it went through. */
  async drain(): Promise<number> {
    let seen = 0;
    for (;;) {
      const batch = this.events.eventsAfter(this.uncommittedSeq ?? this.events.cursor(this.consumer), 500);
      if (batch.length === 0 || this.isHeld()) {
        this.flushCursor();
        return seen;
      }
      let skippedTo: number | undefined;
      for (const event of batch) {
        if (this.isHeld()) {
          if (skippedTo !== undefined) this.uncommittedSeq = skippedTo;
          this.flushCursor();
          return seen;
        }
        seen++;
        if (!this.handles(event)) {
          skippedTo = event.seq;
          continue;
        }
        if (skippedTo !== undefined) this.uncommittedSeq = skippedTo;
        skippedTo = undefined;
        await this.deliver(event);
      }
      if (skippedTo !== undefined) this.uncommittedSeq = skippedTo;
      this.flushCursor();
    }
  }

  private flushCursor(): void {
    if (this.uncommittedSeq === undefined) return;
    this.events.setCursor(this.consumer, this.uncommittedSeq, this.clock.now());
    this.uncommittedSeq = undefined;
  }

  async retryParked(): Promise<number> {
    let ok = 0;
    for (const p of this.o.store.strategies.parked(this.name)) {
      const event = this.events.eventsAfter(p.seq - 1, 1)[0];
      if (!event || event.seq !== p.seq) continue;
      if (await this.deliver(event, true)) ok++;
    }
    return ok;
  }

  private handles(e: IndexbotEvent): boolean {
    const s = this.loaded.strategy;
    return typeof s.on[e.type] === 'function' && (s.indexes === undefined || s.indexes === 'all' || s.indexes.includes(e.indexId));
  }

  /** Tries the handler up to maxAttempts; commits its effects with the cursor, or parks the event. */
  private async deliver(event: IndexbotEvent, fromParked = false): Promise<boolean> {
    let lastError = '';
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const result = await this.attempt(event);
      if (result.ok) {
        const noEffect = result.writes.size === 0 && result.touched.size === 0 && result.fills.length === 0 && result.alerts.length === 0;
        if (noEffect && !fromParked) {
          this.uncommittedSeq = event.seq;
          for (const r of result.rejects) this.o.onReject?.(this.name, r, event.id);
          return true;
        }
        this.o.store.transaction(() => {
          const t = this.o.store.strategies;
          for (const [k, v] of result.writes) t.setState(this.name, k, v === undefined ? undefined : JSON.parse(v));
          if (result.book.cash !== this.book.cash) t.setCash(this.account, result.book.cash);
          for (const key of result.touched) {
            t.setPosition(this.account, result.book.positions.get(key) ?? { instrument: key, quantity: 0, costUsd: 0 });
          }
          for (const f of result.fills) t.insertFill({ ...f, account: this.account, eventId: event.id });
          for (const a of result.alerts) t.insertAlert(this.name, event.id, a.message, a.data, a.at);
          if (fromParked) t.unpark(this.name, event.seq);
          else this.events.setCursor(this.consumer, event.seq, this.clock.now());
        });
        if (!fromParked) this.uncommittedSeq = undefined;
        for (const [k, v] of result.writes) {
          if (v === undefined) this.state.delete(k);
          else this.state.set(k, v);
        }
        this.book = result.book;
        for (const a of result.alerts) this.o.onAlert?.(this.name, a.message, a.data);
        for (const f of result.fills) this.o.onFill?.(this.name, f, event.id);
        for (const r of result.rejects) this.o.onReject?.(this.name, r, event.id);
        return true;
      }
      lastError = result.error;
      this.log.warn({ event: event.id, attempt, error: lastError }, 'strategy handler failed');
      if (attempt < this.maxAttempts && !this.isStopped()) await sleep(this.clock, this.retryBaseMs * 2 ** (attempt - 1));
      if (this.isStopped()) return false;
    }
    this.log.error({ event: event.id, attempts: this.maxAttempts, error: lastError }, 'event parked for this strategy; it goes on with the next');
    if (!fromParked) this.uncommittedSeq = undefined;
    this.o.store.transaction(() => {
      this.o.store.strategies.park({ strategy: this.name, seq: event.seq, eventId: event.id, attempts: this.maxAttempts, error: lastError, parkedAt: this.clock.now() });
      if (!fromParked) this.events.setCursor(this.consumer, event.seq, this.clock.now());
    });
    return false;
  }

  /** One call into user code, isolated: a read-only event, buffered effects, a time limit. */
  private async attempt(event: IndexbotEvent): Promise<({ ok: true } & Effects) | { ok: false; error: string }> {
    const scope = new AttemptScope(this.name, this.state, this.book, this.market, this.clock, this.o.paper);
    const ctx: StrategyContext<unknown> = {
      params: this.loaded.params as StrategyContext<unknown>['params'],
      log: this.log,
      clock: scope.clock,
      replayed: event.detectedAt < this.startedAt,
      data: scope.data,
      state: scope.state,
      alert: (message, alertData) => scope.alert(message, alertData),
      get broker() {
        return scope.broker();
      },
    };
    const handler = this.loaded.strategy.on[event.type] as ((e: IndexbotEvent, c: StrategyContext<unknown>) => unknown) | undefined;
    let timer: unknown;
    try {
      const result = handler?.(deepFreeze(event), ctx);
      // Only a handler still running after it returned needs a time limit.
      if (isThenable(result)) {
        await Promise.race([
          result,
          new Promise<never>((_, reject) => {
            timer = this.clock.setTimeout(() => reject(new StrategyError(`${this.name}: handler for ${event.type} passed its ${this.timeoutMs} ms limit`, 'STRATEGY_TIMEOUT')), this.timeoutMs);
          }),
        ]);
      }
      return { ok: true, ...scope.effects };
    } catch (e) {
      return { ok: false, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
    } finally {
      scope.close();
      if (timer !== undefined) this.clock.clearTimeout(timer);
    }
  }
}

interface Effects {
  /** Changed keys to their new JSON text (undefined: deleted). */
  writes: Map<string, string | undefined>;
  book: Book;
  touched: Set<string>;
  fills: Fill[];
  /** Refused orders: no effect on the book, reported only. */
  rejects: Rejection[];
  alerts: { message: string; data: unknown; at: number }[];
}

/**
 * What one handler call may touch. Its writes, orders and alerts go to buffers that the
 * runner commits only if the handler returns; after the attempt ends (a timeout, say) any
 * further write throws. Methods live on classes, not per-call closures: this runs for every
 * event of a backtest.
 */
class AttemptScope {
  readonly effects: Effects;
  readonly clock: { now(): number };
  readonly state: BufferedState;
  readonly data: ScopedMarketData;
  private active = true;
  private paperBroker: PaperBroker | undefined;

  constructor(
    private readonly strategy: string,
    committedState: Map<string, string>,
    committedBook: Book,
    private readonly market: MarketQueries,
    private readonly time: Clock,
    private readonly paper: PaperBrokerOptions | undefined,
  ) {
    this.effects = { writes: new Map(), book: { cash: committedBook.cash, positions: committedBook.positions }, touched: new Set(), fills: [], rejects: [], alerts: [] };
    this.clock = { now: () => time.now() };
    this.state = new BufferedState(committedState, this.effects.writes, this);
    this.data = new ScopedMarketData(market, time);
  }

  guard(): void {
    if (!this.active) throw new StrategyError(`${this.strategy}: the handler went on after its attempt ended (timed out?)`, 'STRATEGY_TIMEOUT');
  }

  close(): void {
    this.active = false;
  }

  alert(message: string, data: unknown): void {
    this.guard();
    this.effects.alerts.push({ message: String(message), data: clone(data), at: this.time.now() });
  }

  broker(): PaperBroker {
    this.paperBroker ??= new PaperBroker(this.paperBook(), this.paper);
    return this.paperBroker;
  }

  private paperBook(): PaperBook {
    const fx = this.effects;
    // Positions are copied on first write only: most handlers never trade.
    let ownPositions = false;
    const now = () => this.time.now();
    return {
      price: (i) => (i.kind === 'index' ? this.market.navAt(i.indexId, now())?.nav : this.market.tokenPriceAt(i.address, now())?.priceUsd),
      now,
      cash: () => fx.book.cash,
      setCash: (cash) => {
        this.guard();
        fx.book.cash = cash;
      },
      position: (key) => fx.book.positions.get(key),
      setPosition: (p) => {
        this.guard();
        if (!ownPositions) {
          fx.book.positions = new Map([...fx.book.positions].map(([k, v]) => [k, { ...v }]));
          ownPositions = true;
        }
        fx.touched.add(p.instrument);
        fx.book.positions.set(p.instrument, p);
      },
      positions: () => [...fx.book.positions.values()].filter((p) => p.quantity > 0),
      recordFill: (f) => fx.fills.push(f),
      recordReject: (r) => fx.rejects.push(r),
    };
  }
}

class BufferedState implements StrategyState {
  constructor(
    private readonly committed: Map<string, string>,
    private readonly writes: Map<string, string | undefined>,
    private readonly scope: AttemptScope,
  ) {}

  private current(key: string): string | undefined {
    return this.writes.has(key) ? this.writes.get(key) : this.committed.get(key);
  }

  get<T>(key: string): T | undefined {
    const json = this.current(key);
    return json === undefined ? undefined : (JSON.parse(json) as T);
  }

  set(key: string, value: unknown): void {
    this.scope.guard();
    if (value === undefined) {
      this.delete(key);
      return;
    }
    const json = JSON.stringify(value);
    if (json === this.committed.get(key)) this.writes.delete(key);
    else this.writes.set(key, json);
  }

  delete(key: string): void {
    this.scope.guard();
    if (this.committed.has(key)) this.writes.set(key, undefined);
    else this.writes.delete(key);
  }

  keys(): string[] {
    return [...new Set([...this.committed.keys(), ...this.writes.keys()])].filter((k) => this.current(k) !== undefined);
  }
}

/** The cache as a strategy sees it: every query cut at the clock's now. */
class ScopedMarketData implements MarketData {
  constructor(
    private readonly market: MarketQueries,
    private readonly clock: Clock,
  ) {}

  composition(indexId: string) {
    return this.market.compositionAt(indexId, this.clock.now());
  }

  indexValue(indexId: string) {
    return this.market.navAt(indexId, this.clock.now())?.nav;
  }

  tokenPrice(address: string) {
    return this.market.tokenPriceAt(address, this.clock.now())?.priceUsd;
  }

  rebalances(indexId: string, filter: { status?: 'announced' | 'completed' | 'cancelled' } = {}) {
    return this.market
      .rebalancesAt(indexId, this.clock.now())
      .filter((r) => filter.status === undefined || r.observedStatus === filter.status)
      .map((r) => ({
        id: r.id,
        status: r.observedStatus,
        announcedAt: Date.parse(r.announced_at),
        effectiveAt: Date.parse(r.effective_at),
        changes: r.changes.map((c) => ({ address: c.address, symbol: c.symbol, action: c.action, oldWeight: c.old_weight, newWeight: c.new_weight })),
      }));
  }

  history(indexId: string, q: { from: number; interval?: '1h' | '1d' }) {
    return this.market.historyBetween(indexId, q.interval ?? '1h', q.from, this.clock.now());
  }
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

/** Events reach handlers read-only: one strategy cannot change what the next one sees. */
function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}
