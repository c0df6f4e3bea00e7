/** One strategy's delivery loop: its cursor on the event log, each call into its code through one wrapper, and what a call commits. */
import { type Clock, type Logger, StrategyError, ZERO, decimal, deepFreeze, secretValues, silentLogger, sleep, systemClock, withoutSecrets } from '../core/index.ts';
import type { IndexbotEvent } from '../detect/index.ts';
import { failureFields } from '../store/index.ts';
import { AttemptScope, type Book, type BookView, ClockView, type Effects, HandlerContext, type NothingDone, type RunnerShared, ScopedMarketData, nothingDone, viewBook } from './attempt.ts';
import { fillView } from './broker.ts';
import type { StrategyContext } from './define.ts';
import { LOADER_QUERY, type LoadedStrategy } from './loader.ts';
import type { EventLog, RuntimeOptions, StrategyRuntime } from './runtime.ts';
import { CommittedState } from './state.ts';

/** The event log's consumer name of a strategy: its cursor. */
export const consumerOf = (name: string) => `strategy:${name}`;

export class StrategyRunner {
  readonly name: string;
  private readonly consumer: string;
  private readonly account: string;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly maxAttempts: number;
  private readonly retryBaseMs: number;
  private timeoutMs: number;
  private readonly events: EventLog;
  private readonly shared: RunnerShared;
  /** Committed state per key: a read parses only its key, once; a write of an equal value is no write. */
  private readonly state: CommittedState;
  /** The committed book, as the result of a handler call that changed nothing: one object per book. */
  private nothing: NothingDone;
  private bookView: BookView | undefined;
  private wakeUp: (() => void) | undefined;
  /** Waiting between two tries of a failed event. */
  backingOff = false;
  /** News told while no rest was waiting (the loop was between a read and its rest): the next rest ends at once. */
  private woken = false;
  /**
   * The last event whose handler changed nothing: its cursor move rides on the next commit
   * (or the end of the batch). Were we to crash before, it is only delivered again, which
   * at-least-once delivery allows, and it had no effect to repeat.
   */
  private uncommittedSeq: number | undefined;

  constructor(
    private loaded: LoadedStrategy,
    private readonly o: RuntimeOptions,
    private readonly startedAt: number,
    private readonly runtime: Pick<StrategyRuntime, 'isStopped' | 'isPaused' | 'progressed'>,
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
    const market = o.market ?? o.store;
    const clock = this.clock;
    this.shared = { strategy: this.name, params: loaded.params, log: this.log, clock, now: new ClockView(clock), data: new ScopedMarketData(market, clock), market, paper: o.paper };
    const t = o.store.strategies;
    t.openAccount(this.account, decimal(o.paper?.initialCash ?? 10_000));
    this.state = new CommittedState([...t.stateEntries(this.name)].map(([k, v]) => [k, JSON.stringify(v)]));
    this.nothing = nothingDone({ cash: t.account(this.account)!.cash, positions: new Map(t.positions(this.account).map((p) => [p.instrument, p])) });
  }

  private get book(): Book {
    return this.nothing.book;
  }

  /** Parked events so far, and those past `maxFailuresLogged`. */
  private failuresSeen = 0;
  private failuresNotLogged = 0;

  private logsFailure(): boolean {
    return this.o.maxFailuresLogged === undefined || this.failuresSeen < this.o.maxFailuresLogged;
  }

  private isHeld(): boolean {
    return this.runtime.isStopped() || this.runtime.isPaused(this.name);
  }

  replace(loaded: LoadedStrategy): void {
    this.loaded = loaded;
    this.timeoutMs = loaded.strategy.timeoutMs ?? this.o.timeoutMs ?? 5_000;
    // Validated by the new file's schema: its defaults may have changed with it.
    this.shared.params = loaded.params;
  }

  /** The last event this strategy is done with. */
  get position(): number {
    return this.uncommittedSeq ?? this.events.cursor(this.consumer);
  }

  get committedState(): Map<string, unknown> {
    return new Map(this.state.keys().map((k) => [k, this.state.read(k)]));
  }

  /** Made once per change of the book: a backtest reads it at every replayed point. */
  get committedBookView(): BookView {
    this.bookView ??= viewBook(this.book);
    return this.bookView;
  }

  wake(): void {
    if (this.wakeUp) this.wakeUp();
    else this.woken = true;
  }

  async loop(): Promise<void> {
    let failures = 0;
    while (!this.runtime.isStopped()) {
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
      if (delivered === 0 && !this.runtime.isStopped()) await this.rest(1_000);
    }
  }

  /** Waits up to `ms`, or until new events are announced. */
  private async rest(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return;
    }
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
        const delivered = this.deliver(event);
        if (delivered !== true) await delivered;
      }
      if (skippedTo !== undefined) this.uncommittedSeq = skippedTo;
      this.flushCursor();
    }
  }

  private flushCursor(): void {
    if (this.uncommittedSeq !== undefined) {
      this.events.setCursor(this.consumer, this.uncommittedSeq, this.clock.now());
      this.uncommittedSeq = undefined;
    }
    this.runtime.progressed();
  }

  async retryParked(): Promise<number> {
    let ok = 0;
    for (const p of this.o.store.strategies.parked(this.name)) {
      const event = this.events.eventsAfter(p.seq - 1, 1)[0];
      if (!event || event.seq !== p.seq) continue;
      if (await this.retryDeliver(event, true)) ok++;
    }
    return ok;
  }

  private handles(e: IndexbotEvent): boolean {
    const s = this.loaded.strategy;
    return typeof s.on[e.type] === 'function' && (s.indexes === undefined || s.indexes === 'all' || s.indexes.includes(e.indexId));
  }

  /**
   * Tries the handler up to maxAttempts; commits its effects with the cursor, or parks the
   * event. A first attempt that did nothing to commit is settled here: without a promise
   * when the handler returned at once, and in the handler's own promise's callback when it
   * is async (most events of a backtest either way).
   */
  private deliver(event: IndexbotEvent): true | Promise<boolean> {
    const first = this.attempt(event);
    if (isThenable(first)) return first.then((r) => this.settledWithoutEffect(event, r) || this.retryDeliver(event, false, r));
    return this.settledWithoutEffect(event, first) || this.retryDeliver(event, false, first);
  }

  /** A first attempt that returned and changed nothing: only its cursor move, which rides on the next commit. */
  private settledWithoutEffect(event: IndexbotEvent, first: AttemptResult): boolean {
    if (!first.ok || !isNoEffect(first)) return false;
    this.uncommittedSeq = event.seq;
    for (const r of first.rejects) this.o.onReject?.(this.name, r, event.id);
    return true;
  }

  private async retryDeliver(event: IndexbotEvent, fromParked: boolean, first?: AttemptResult): Promise<boolean> {
    let lastError = '';
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const result = attempt === 1 && first !== undefined ? first : await this.attempt(event);
      if (result.ok) {
        if (!fromParked && this.settledWithoutEffect(event, result)) return true;
        const record = !this.o.memoryOnly;
        const commit = () => {
          const t = this.o.store.strategies;
          if (record) {
            for (const [k, json] of result.writes) t.setState(this.name, k, json);
            if (result.book.cash !== this.book.cash) t.setCash(this.account, result.book.cash);
            for (const key of result.touched) {
              t.setPosition(this.account, result.book.positions.get(key) ?? { instrument: key, quantity: ZERO, costUsd: ZERO });
            }
            for (const f of result.fills) t.insertFill({ ...f, account: this.account, eventId: event.id });
            for (const a of result.alerts) t.insertAlert(this.name, event.id, a.message, a.data, a.at);
          }
          if (fromParked) t.unpark(this.name, event.seq);
          else this.events.setCursor(this.consumer, event.seq, this.clock.now());
        };
        // Memory only, a cursor move in the event log is all there is to commit.
        if (record || fromParked) this.o.store.transaction(commit);
        else commit();
        if (!fromParked) this.uncommittedSeq = undefined;
        this.state.apply(result.writes);
        if (result.book !== this.book) {
          this.nothing = nothingDone(result.book);
          this.bookView = undefined;
        }
        for (const a of result.alerts) this.o.onAlert?.(this.name, a.message, a.data, event.id, a.at);
        for (const f of result.fills) this.o.onFill?.(this.name, fillView(f), event.id);
        for (const r of result.rejects) this.o.onReject?.(this.name, r, event.id);
        return true;
      }
      lastError = result.error;
      if (this.logsFailure()) this.log.warn({ event: event.id, attempt, error: lastError }, 'strategy handler failed');
      if (attempt < this.maxAttempts && !this.runtime.isStopped()) {
        // Between tries it holds up no one (`passed`): its next try may see data stored since, as in one process.
        this.backingOff = true;
        this.runtime.progressed();
        try {
          await sleep(this.clock, this.retryBaseMs * 2 ** (attempt - 1));
        } finally {
          this.backingOff = false;
        }
      }
      if (this.runtime.isStopped()) return false;
    }
    // A backtest's ledger is thrown away at its end: nothing there retries a parked event, so its log says skipped (as its report does).
    const fate = this.o.memoryOnly ? 'skipped' : 'parked';
    if (this.logsFailure()) this.log.error({ event: event.id, attempts: this.maxAttempts, error: lastError }, `event ${fate} for this strategy; it goes on with the next`);
    else if (this.failuresNotLogged++ === 0) this.log.warn({ logged: this.o.maxFailuresLogged }, `further failed events are ${fate} and counted, not logged`);
    this.failuresSeen++;
    if (!fromParked) this.uncommittedSeq = undefined;
    this.o.store.transaction(() => {
      this.o.store.strategies.park({ strategy: this.name, seq: event.seq, eventId: event.id, attempts: this.maxAttempts, error: lastError, parkedAt: this.clock.now() });
      if (!fromParked) this.events.setCursor(this.consumer, event.seq, this.clock.now());
    });
    return false;
  }

  /**
   * One call into user code, isolated: a read-only event, buffered effects, a time limit on
   * the injected clock. A handler that returns a value (not a promise) is settled at once.
   */
  private attempt(event: IndexbotEvent): AttemptResult | Promise<AttemptResult> {
    const scope = new AttemptScope(this.shared, this.state, this.nothing);
    const handler = this.loaded.strategy.on[event.type] as (e: IndexbotEvent, c: StrategyContext<unknown>) => unknown;
    let returned: unknown;
    try {
      returned = handler(deepFreeze(event), new HandlerContext(scope, event.detectedAt < this.startedAt));
    } catch (e) {
      scope.close();
      return failed(e);
    }
    if (!isThenable(returned)) return settle(scope);
    return this.awaitHandler(returned, scope, event);
  }

  private async awaitHandler(running: PromiseLike<unknown>, scope: AttemptScope, event: IndexbotEvent): Promise<AttemptResult> {
    let outcome: { error: unknown } | null | undefined;
    const watched = Promise.resolve(running).then(
      () => {
        outcome = null;
      },
      (error: unknown) => {
        outcome = { error };
      },
    );
    // Most handlers are async in name only (nothing to wait for, or awaits that settle at
    // once): they end within a few microtask turns and need no timer. Only one still
    // running after that gets the time limit, counted from then, on the injected clock.
    for (let turn = 0; turn < 8 && outcome === undefined; turn++) await undefined;
    if (outcome === undefined) {
      let timer: unknown;
      try {
        await Promise.race([
          watched,
          new Promise<never>((_, reject) => {
            timer = this.clock.setTimeout(() => reject(new StrategyError(`${this.name}: handler for ${event.type} passed its ${this.timeoutMs} ms limit`, 'STRATEGY_TIMEOUT')), this.timeoutMs);
          }),
        ]);
      } catch (e) {
        outcome = { error: e };
      } finally {
        this.clock.clearTimeout(timer);
      }
    }
    if (outcome) {
      scope.close();
      return failed(outcome.error);
    }
    return settle(scope);
  }
}

type AttemptResult = ({ ok: true } & Effects) | { ok: false; error: string };

/** The attempt is over: its effects, or the failure to serialize its state. */
function settle(scope: AttemptScope): AttemptResult {
  scope.close();
  try {
    return scope.effects();
  } catch (e) {
    return failed(e);
  }
}

/**
 * A handler's failure as kept with a parked event and logged: with its stack, so the author
 * finds the line, cut where the runtime's own frames begin (they say nothing about the strategy).
 */
function failed(e: unknown): { ok: false; error: string } {
  // The error goes to logs, the parked record, reports and `strategies parked`: a credential the handler's message quotes goes nowhere.
  const secrets = secretValues();
  if (!(e instanceof Error)) return { ok: false, error: withoutSecrets(String(e), secrets) };
  // Strategy files are imported under a query that makes each load new (loader.ts): not part of their path.
  const lines = (e.stack ?? `${e.name}: ${e.message}`).replace(LOADER_QUERY, '').split('\n');
  const ours = lines.findIndex((l, i) => i > 0 && OWN_FRAME.test(l));
  return { ok: false, error: withoutSecrets((ours === -1 ? lines : lines.slice(0, ours)).join('\n'), secrets) };
}

const OWN_FRAME = /[/\\]strategy[/\\](runner|runtime|attempt)\.[jt]s:/;

function isNoEffect(fx: Effects): boolean {
  return fx.writes.size === 0 && fx.touched.size === 0 && fx.fills.length === 0 && fx.alerts.length === 0;
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}
