import { type Clock, type Logger, MAX_TIMER_MS, StrategyError, checkOptionRange, silentLogger, systemClock } from '../core/index.ts';
import type { SnapshotStore } from '../store/index.ts';
import type { BookView } from './attempt.ts';
import type { Fill, Rejection } from './broker.ts';
import type { LoadedStrategy } from './loader.ts';
import type { PaperBrokerOptions } from './paper-broker.ts';
import { StrategyRunner, consumerOf } from './runner.ts';

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
  /** Each alert a committed handler call raised, with the id of its event and its (simulated) time. */
  onAlert?: (strategy: string, message: string, data: unknown, eventId: string, at: number) => void;
  /** Each committed fill, with the id of the event whose handler made it. */
  onFill?: (strategy: string, fill: Fill, eventId: string) => void;
  /** Each order the broker refused in a handler call that returned, with the event's id. */
  onReject?: (strategy: string, rejection: Rejection, eventId: string) => void;
  /**
   * Keep each strategy's state, book, fills and alerts in memory only (`state`, `book` and
   * the callbacks give them), not in the store: a backtest, whose ledger is thrown away at
   * the end, then writes nothing per event. Parked events are still stored. @default false
   */
  memoryOnly?: boolean;
  /**
   * Failed events each strategy logs, from 0; those after are parked and counted, not
   * logged (a backtest's report counts them all: a strategy failing on every event wrote
   * two lines per event). @default no limit: live, each failure is news
   */
  maxFailuresLogged?: number;
  /**
   * Where a strategy new to the store (no cursor there yet) starts reading the event log:
   * `start`, every event it holds (each before `startedAt` flagged replayed); `end`, what is
   * detected from now on, as a daemon runs a strategy added to a bot that has run for months
   * (its handlers would otherwise act now on months of old events). @default 'start'
   */
  newStrategiesFrom?: 'start' | 'end';
}

/** The runtime key under which the paused strategies' names are kept, so a restart keeps them paused. */
const PAUSED_KEY = 'pausedStrategies';

/** The strategies paused on this database (by the HTTP face, Telegram or the CLI); they stay paused across restarts. */
export function pausedStrategies(store: SnapshotStore): string[] {
  return store.runtime<string[]>(PAUSED_KEY)?.value ?? [];
}

/** Records a strategy as paused on this database, or no longer; false when it already was so. */
export function markPaused(store: SnapshotStore, name: string, paused: boolean): boolean {
  const names = new Set(pausedStrategies(store));
  if (names.has(name) === paused) return false;
  if (paused) names.add(name);
  else names.delete(name);
  store.setRuntime(PAUSED_KEY, [...names].sort(), Date.now());
  return true;
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
  /** Callers of `passed` waiting for the strategies to move on. */
  private readonly waiters = new Set<() => void>();
  private readonly pausedNames: Set<string>;

  constructor(private readonly o: RuntimeOptions) {
    // Checked where they enter: 0 attempts would park every event with no error to show.
    checkOptionRange('maxAttempts', o.maxAttempts, { min: 1, max: 100 });
    checkOptionRange('retryBaseMs', o.retryBaseMs, { min: 0, max: MAX_TIMER_MS });
    checkOptionRange('timeoutMs', o.timeoutMs, { min: 1, max: MAX_TIMER_MS });
    checkOptionRange('maxFailuresLogged', o.maxFailuresLogged, { min: 0, max: Number.MAX_SAFE_INTEGER });
    for (const s of o.strategies) checkOptionRange(`timeoutMs of strategy ${s.strategy.name}`, s.strategy.timeoutMs, { min: 1, max: MAX_TIMER_MS });
    if (o.newStrategiesFrom !== undefined && o.newStrategiesFrom !== 'start' && o.newStrategiesFrom !== 'end') {
      throw new TypeError(`Expected \`newStrategiesFrom\` to be 'start' or 'end', got \`${String(o.newStrategiesFrom)}\``);
    }
    const startedAt = o.startedAt ?? (o.clock ?? systemClock).now();
    this.pausedNames = new Set(pausedStrategies(o.store));
    if (o.newStrategiesFrom === 'end') this.startNewStrategiesAtTheEnd();
    this.runners = o.strategies.map((s) => new StrategyRunner(s, o, startedAt, this));
  }

  private startNewStrategiesAtTheEnd(): void {
    // The store's own log: a daemon's (a backtest replays into a log of its own and starts every strategy at its start).
    const last = this.o.store.lastEventSeq();
    const started = this.o.store.startCursors(
      this.o.strategies.map(({ strategy }) => [consumerOf(strategy.name), last] as const),
      (this.o.clock ?? systemClock).now(),
    );
    if (last === 0) return;
    for (const { strategy } of this.o.strategies) {
      if (started.some(([consumer]) => consumer === consumerOf(strategy.name))) {
        (this.o.logger ?? silentLogger).info({ strategy: strategy.name, afterEvent: last }, 'strategy new to this database: it is given the events detected from now on');
      }
    }
  }

  /** Asked by each runner before each event. Methods, not closures made per runtime: a sweep's runs then call the same targets, and V8 keeps the code it optimized. */
  isStopped(): boolean {
    return this.stopped;
  }

  isPaused(name: string): boolean {
    return this.pausedNames.has(name);
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
    // A backtest runs one strategy and drains at every replayed moment: no array and Promise.all for it.
    if (this.runners.length === 1) await this.runners[0]!.drain();
    else await Promise.all(this.runners.map((r) => r.drain()));
  }

  /** A strategy's paper cash and open positions as committed, as numbers (views of the exact ledger). */
  book(strategy: string): BookView | undefined {
    return this.runners.find((x) => x.name === strategy)?.committedBookView;
  }

  /** A strategy's `ctx.state` as committed, key by key. */
  state(strategy: string): Map<string, unknown> | undefined {
    return this.runners.find((x) => x.name === strategy)?.committedState;
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
    if (!markPaused(this.o.store, r.name, paused)) return false;
    if (paused) this.pausedNames.add(r.name);
    else this.pausedNames.delete(r.name);
    // From the HTTP face, the dashboard or Telegram alike: why a strategy stopped trading is in the log (trial 35: no line).
    (this.o.logger ?? silentLogger).info({ strategy: r.name }, paused ? 'strategy paused: its events wait in the log' : 'strategy resumed: it is given the events that waited');
    return true;
  }

  private runner(name: string): StrategyRunner {
    const r = this.runners.find((x) => x.name === name);
    if (!r) throw new StrategyError(`no strategy named "${name}" is running (running: ${this.names.join(', ') || 'none'})`, 'STRATEGY_UNKNOWN');
    return r;
  }

  /**
   * Runs a new version of a running strategy, found by name (watch mode): the event in hand
   * finishes on the old code, the next one reaches the new; cursor, state and paper book carry over.
   */
  replace(loaded: LoadedStrategy): void {
    this.runner(loaded.strategy.name).replace(loaded);
  }

  /** Re-delivers parked events (all strategies, or one); returns how many succeeded. */
  async retryParked(strategy?: string): Promise<number> {
    let ok = 0;
    for (const r of this.runners) if (strategy === undefined || r.name === strategy) ok += await r.retryParked();
    return ok;
  }

  /**
   * Resolves once every strategy not paused has gone past `seq` (handled, skipped or parked
   * it) or is waiting to try a failed event again, or the runtime stops. A strategies runner
   * stores the data behind an event only then.
   */
  async passed(seq: number): Promise<void> {
    while (!this.stopped && this.runners.some((r) => !this.pausedNames.has(r.name) && !r.backingOff && r.position < seq)) {
      // Woken as soon as a strategy is done with what it had; the timer covers what moves unannounced (a pause).
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, 20);
        this.waiters.add(done);
      });
    }
  }

  /** A strategy is done with the events it had: `passed` looks again. */
  progressed(): void {
    if (this.waiters.size === 0) return;
    for (const done of [...this.waiters]) done();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.notify();
    await Promise.allSettled(this.loops);
  }
}
