import { type Clock, type Logger, StrategyError } from '../core/index.ts';
import { type Decimal, ZERO, toNumber } from '../core/index.ts';
import type { PaperPosition } from '../store/index.ts';
import type { LedgerFill, Rejection } from './broker.ts';
import type { MarketData, StrategyContext, StrategyState } from './define.ts';
import { type PaperBook, PaperBroker, type PaperBrokerOptions } from './paper-broker.ts';
import type { MarketQueries } from './runtime.ts';
import { BufferedState, type CommittedState, NO_WRITES, type StateWrites } from './state.ts';

/** A strategy's paper book, exact. */
export interface Book {
  cash: Decimal;
  positions: Map<string, PaperPosition>;
}

/** The book as reports and tests read it: numbers, the nearest doubles to the exact amounts. */
export interface BookView {
  cash: number;
  /** Open positions only. */
  positions: { instrument: string; quantity: number; costUsd: number }[];
}

export function viewBook(book: Book): BookView {
  const positions: BookView['positions'] = [];
  for (const p of book.positions.values()) {
    if (p.quantity.gt(ZERO)) positions.push({ instrument: p.instrument, quantity: toNumber(p.quantity), costUsd: toNumber(p.costUsd) });
  }
  return { cash: toNumber(book.cash), positions };
}

export interface Effects {
  /** Changed keys to their new JSON text (undefined: deleted). */
  writes: StateWrites;
  book: Book;
  touched: ReadonlySet<string>;
  fills: readonly LedgerFill[];
  /** Refused orders: no effect on the book, reported only. */
  rejects: readonly Rejection[];
  alerts: readonly { message: string; data: unknown; at: number }[];
}

const NO_KEYS: ReadonlySet<string> = new Set();
const NONE: readonly never[] = Object.freeze([]);

/** The effects of a call that changed nothing, over the committed `book`: made once per book, not per call. */
export type NothingDone = Readonly<{ ok: true } & Effects>;

export function nothingDone(book: Book): NothingDone {
  return Object.freeze({ ok: true, writes: NO_WRITES, book, touched: NO_KEYS, fills: NONE, rejects: NONE, alerts: NONE });
}

/** What does not change from one handler call to the next: made once per strategy. */
export interface RunnerShared {
  strategy: string;
  params: unknown;
  log: Logger;
  clock: Clock;
  now: ClockView;
  data: ScopedMarketData;
  market: MarketQueries;
  paper: PaperBrokerOptions | undefined;
}

/**
 * What one handler call may touch. Its writes, orders and alerts go to buffers that the
 * runner commits only if the handler returns; after the attempt ends (a timeout, say) any
 * further write throws. Nothing is allocated before the handler uses it: most calls (a
 * no-op, a strategy that only reads) cost one scope and one context.
 */
export class AttemptScope {
  private active = true;
  private bufferedState: BufferedState | undefined;
  private paperBroker: PaperBroker | undefined;
  private book: Book;
  private touched: Set<string> | undefined;
  private fills: LedgerFill[] | undefined;
  private rejects: Rejection[] | undefined;
  private alerts: { message: string; data: unknown; at: number }[] | undefined;

  constructor(
    readonly shared: RunnerShared,
    private readonly committedState: CommittedState,
    /** What a call that changed nothing gives back: its `book` is the committed one. */
    private readonly nothing: NothingDone,
  ) {
    this.book = nothing.book;
  }

  guard(): void {
    if (!this.active) throw new StrategyError(`${this.shared.strategy}: the handler went on after its attempt ended (timed out?)`, 'STRATEGY_TIMEOUT');
  }

  get state(): BufferedState {
    this.bufferedState ??= new BufferedState(this.committedState, this);
    return this.bufferedState;
  }

  alert(message: string, data: unknown): void {
    this.guard();
    (this.alerts ??= []).push({ message: String(message), data: clone(data), at: this.shared.clock.now() });
  }

  broker(): PaperBroker {
    this.paperBroker ??= new PaperBroker(this.paperBook(), this.shared.paper);
    return this.paperBroker;
  }

  /** Ends the attempt: later writes throw. */
  close(): void {
    this.active = false;
  }

  /** What the handler did, its state writes as JSON text (this throws for a value JSON cannot hold). */
  effects(): { ok: true } & Effects {
    // Most calls change nothing (every event of a no-op, most of a strategy that reads): they share one result.
    if (this.book === this.nothing.book && !this.bufferedState?.written && !this.touched && !this.fills && !this.rejects && !this.alerts) return this.nothing;
    return {
      ok: true,
      writes: this.bufferedState?.serialized() ?? NO_WRITES,
      book: this.book,
      touched: this.touched ?? NO_KEYS,
      fills: this.fills ?? NONE,
      rejects: this.rejects ?? NONE,
      alerts: this.alerts ?? NONE,
    };
  }

  private paperBook(): PaperBook {
    const { market, clock } = this.shared;
    const now = () => clock.now();
    // The book is copied on first write only: most handlers never trade.
    let own = false;
    const writable = () => {
      this.guard();
      if (!own) {
        this.book = { cash: this.book.cash, positions: new Map([...this.book.positions].map(([k, v]) => [k, { ...v }])) };
        own = true;
      }
      return this.book;
    };
    return {
      price: (i) => (i.kind === 'index' ? market.navAt(i.indexId, now())?.nav : market.tokenPriceAt(i.address, now())?.priceUsd),
      now,
      cash: () => this.book.cash,
      setCash: (cash) => {
        writable().cash = cash;
      },
      position: (key) => this.book.positions.get(key),
      setPosition: (p) => {
        writable().positions.set(p.instrument, p);
        (this.touched ??= new Set()).add(p.instrument);
      },
      positions: () => [...this.book.positions.values()].filter((p) => p.quantity.gt(ZERO)),
      recordFill: (f) => {
        (this.fills ??= []).push(f);
      },
      recordReject: (r) => {
        (this.rejects ??= []).push(r);
      },
    };
  }
}

/**
 * `ctx` of one handler call: a view of its scope. Its parts are made when first read, so a
 * handler that reads none of them allocates nothing more.
 */
export class HandlerContext implements StrategyContext<unknown> {
  constructor(
    private readonly scope: AttemptScope,
    readonly replayed: boolean,
  ) {}

  get params(): Readonly<unknown> {
    return this.scope.shared.params as Readonly<unknown>;
  }

  get log(): Logger {
    return this.scope.shared.log;
  }

  get clock(): { now(): number } {
    return this.scope.shared.now;
  }

  get data(): MarketData {
    return this.scope.shared.data;
  }

  get state(): StrategyState {
    return this.scope.state;
  }

  /** A function of its own, so that `const { alert } = ctx` works too. */
  get alert(): StrategyContext<unknown>['alert'] {
    return (message, data) => this.scope.alert(message, data);
  }

  get broker(): PaperBroker {
    return this.scope.broker();
  }
}

/** `ctx.clock`: the clock's `now` and nothing else. A class, so that every run's strategies call one `now`, not a closure of their own (V8 dropped their optimized code at each new run of a sweep). */
export class ClockView {
  constructor(private readonly clock: Clock) {}

  now(): number {
    return this.clock.now();
  }
}

/** The cache as a strategy sees it: every query cut at the clock's now. */
export class ScopedMarketData implements MarketData {
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

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}
