import { type Clock, type Logger, StrategyError, silentLogger, sleep, systemClock } from '../core/index.ts';
import type { IndexbotEvent } from '../detect/index.ts';
import type { PaperPosition, SnapshotStore } from '../store/index.ts';
import type { Fill, Instrument } from './broker.ts';
import type { MarketData, StrategyContext, StrategyState } from './define.ts';
import type { LoadedStrategy } from './loader.ts';
import { PaperBroker, type PaperBrokerOptions } from './paper-broker.ts';

export interface RuntimeOptions {
  store: SnapshotStore;
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
  onFill?: (strategy: string, fill: Fill) => void;
}

export const consumerOf = (name: string) => `strategy:${name}`;

interface Book {
  cash: number;
  positions: Map<string, PaperPosition>;
}

/**
 * Delivers the event log to each strategy through its own cursor. Every call into user code
 * goes through one wrapper (`attempt`): the event is copied, state writes and orders are
 * buffered, the handler is timed out, and only a handler that returned commits its state,
 * fills, alerts and the cursor move, in one transaction. A handler that keeps failing has
 * the event parked and the strategy goes on. Each strategy runs its own loop, so a slow or
 * broken one delays nobody.
 */
export class StrategyRuntime {
  private readonly runners: StrategyRunner[];
  private stopped = false;
  private loops: Promise<void>[] = [];

  constructor(private readonly o: RuntimeOptions) {
    const startedAt = o.startedAt ?? (o.clock ?? systemClock).now();
    this.runners = o.strategies.map((s) => new StrategyRunner(s, o, startedAt, () => this.stopped));
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
  private state: Map<string, unknown>;
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
  ) {
    this.name = loaded.strategy.name;
    this.consumer = consumerOf(this.name);
    this.account = `strategy:${this.name}`;
    this.clock = o.clock ?? systemClock;
    this.log = (o.logger ?? silentLogger).child({ strategy: this.name });
    this.maxAttempts = o.maxAttempts ?? 3;
    this.retryBaseMs = o.retryBaseMs ?? 500;
    this.timeoutMs = loaded.strategy.timeoutMs ?? o.timeoutMs ?? 5_000;
    const t = o.store.strategies;
    t.openAccount(this.account, o.paper?.initialCash ?? 10_000);
    this.state = t.stateEntries(this.name);
    this.book = { cash: t.account(this.account)!.cash, positions: new Map(t.positions(this.account).map((p) => [p.instrument, p])) };
  }

  wake(): void {
    this.wakeUp?.();
  }

  async loop(): Promise<void> {
    while (!this.isStopped()) {
      const delivered = await this.drain();
      if (delivered === 0 && !this.isStopped()) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 1_000);
          this.wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wakeUp = undefined;
      }
    }
  }

  /** Delivers what is in the log after the cursor; returns how many events it went through. */
  async drain(): Promise<number> {
    let seen = 0;
    for (;;) {
      const batch = this.o.store.eventsAfter(this.uncommittedSeq ?? this.o.store.cursor(this.consumer), 500);
      if (batch.length === 0 || this.isStopped()) {
        this.flushCursor();
        return seen;
      }
      let skippedTo: number | undefined;
      for (const event of batch) {
        if (this.isStopped()) {
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
    this.o.store.setCursor(this.consumer, this.uncommittedSeq, this.clock.now());
    this.uncommittedSeq = undefined;
  }

  async retryParked(): Promise<number> {
    let ok = 0;
    for (const p of this.o.store.strategies.parked(this.name)) {
      const event = this.o.store.eventsAfter(p.seq - 1, 1)[0];
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
          return true;
        }
        this.o.store.transaction(() => {
          const t = this.o.store.strategies;
          for (const [k, v] of result.writes) t.setState(this.name, k, v);
          if (result.book.cash !== this.book.cash) t.setCash(this.account, result.book.cash);
          for (const key of result.touched) {
            t.setPosition(this.account, result.book.positions.get(key) ?? { instrument: key, quantity: 0, costUsd: 0 });
          }
          for (const f of result.fills) t.insertFill({ ...f, account: this.account, eventId: event.id });
          for (const a of result.alerts) t.insertAlert(this.name, event.id, a.message, a.data, a.at);
          if (fromParked) t.unpark(this.name, event.seq);
          else this.o.store.setCursor(this.consumer, event.seq, this.clock.now());
        });
        if (!fromParked) this.uncommittedSeq = undefined;
        for (const [k, v] of result.writes) {
          if (v === undefined) this.state.delete(k);
          else this.state.set(k, v);
        }
        this.book = result.book;
        for (const a of result.alerts) this.o.onAlert?.(this.name, a.message, a.data);
        for (const f of result.fills) this.o.onFill?.(this.name, f);
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
      if (!fromParked) this.o.store.setCursor(this.consumer, event.seq, this.clock.now());
    });
    return false;
  }

  /** One call into user code, isolated: copied inputs, buffered effects, a time limit. */
  private async attempt(event: IndexbotEvent): Promise<
    | { ok: true; writes: Map<string, unknown>; book: Book; touched: Set<string>; fills: Fill[]; alerts: { message: string; data: unknown; at: number }[] }
    | { ok: false; error: string }
  > {
    let active = true;
    const guard = () => {
      if (!active) throw new StrategyError(`${this.name}: the handler went on after its attempt ended (timed out?)`, 'STRATEGY_TIMEOUT');
    };
    const writes = new Map<string, unknown>();
    const book: Book = { cash: this.book.cash, positions: new Map([...this.book.positions].map(([k, p]) => [k, { ...p }])) };
    const touched = new Set<string>();
    const fills: Fill[] = [];
    const alerts: { message: string; data: unknown; at: number }[] = [];
    const now = () => this.clock.now();
    const store = this.o.store;
    const price = (i: Instrument) => (i.kind === 'index' ? store.navAt(i.indexId, now())?.nav : store.tokenPriceAt(i.address, now())?.priceUsd);

    const state: StrategyState = {
      get: <T>(key: string) => (writes.has(key) ? (clone(writes.get(key)) as T | undefined) : (clone(this.state.get(key)) as T | undefined)),
      set: (key, value) => {
        guard();
        writes.set(key, clone(value));
      },
      delete: (key) => {
        guard();
        writes.set(key, undefined);
      },
      keys: () => [...new Set([...this.state.keys(), ...writes.keys()])].filter((k) => (writes.has(k) ? writes.get(k) !== undefined : true)),
    };
    const data: MarketData = {
      composition: (indexId) => store.compositionAt(indexId, now()),
      indexValue: (indexId) => store.navAt(indexId, now())?.nav,
      tokenPrice: (address) => store.tokenPriceAt(address, now())?.priceUsd,
      rebalances: (indexId, filter = {}) =>
        store
          .rebalancesAt(indexId, now())
          .filter((r) => filter.status === undefined || r.observedStatus === filter.status)
          .map((r) => ({
            id: r.id,
            status: r.observedStatus,
            announcedAt: Date.parse(r.announced_at),
            effectiveAt: Date.parse(r.effective_at),
            changes: r.changes.map((c) => ({ address: c.address, symbol: c.symbol, action: c.action, oldWeight: c.old_weight, newWeight: c.new_weight })),
          })),
      history: (indexId, q) => store.historyBetween(indexId, q.interval ?? '1h', q.from, now()),
    };
    const makeBroker = () => new PaperBroker(
      {
        price,
        now,
        cash: () => book.cash,
        setCash: (cash) => {
          guard();
          book.cash = cash;
        },
        position: (key) => book.positions.get(key),
        setPosition: (p) => {
          guard();
          touched.add(p.instrument);
          book.positions.set(p.instrument, p);
        },
        positions: () => [...book.positions.values()].filter((p) => p.quantity > 0),
        recordFill: (f) => fills.push(f),
      },
      this.o.paper,
    );
    let broker: PaperBroker | undefined;
    const ctx: StrategyContext<unknown> = {
      params: this.loaded.params as StrategyContext<unknown>['params'],
      log: this.log,
      clock: { now },
      replayed: event.detectedAt < this.startedAt,
      data,
      state,
      alert: (message, alertData) => {
        guard();
        alerts.push({ message: String(message), data: clone(alertData), at: now() });
      },
      get broker() {
        broker ??= makeBroker();
        return broker;
      },
    };
    const handler = this.loaded.strategy.on[event.type] as ((e: IndexbotEvent, c: StrategyContext<unknown>) => unknown) | undefined;
    let timer: unknown;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = this.clock.setTimeout(() => reject(new StrategyError(`${this.name}: handler for ${event.type} passed its ${this.timeoutMs} ms limit`, 'STRATEGY_TIMEOUT')), this.timeoutMs);
      });
      await Promise.race([Promise.resolve().then(() => handler?.(structuredClone(event), ctx)), timeout]);
      return { ok: true, writes, book, touched, fills, alerts };
    } catch (e) {
      return { ok: false, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
    } finally {
      active = false;
      this.clock.clearTimeout(timer);
    }
  }
}

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}
