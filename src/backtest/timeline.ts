import type { Rebalance } from '../contract/index.ts';
import { type Clock, systemClock } from '../core/index.ts';
import type { IndexbotEvent } from '../detect/index.ts';
import type { HistoryMoment } from '../store/index.ts';
import type { StrategyRuntime } from '../strategy/index.ts';
import type { MemoryEventLog } from './event-log.ts';
import type { ReplayMarket } from './replay-market.ts';
import { type Close, type CloseSource, DailyCloses } from './series.ts';

/*
 * The replay's walk through time is written as classes, not as closures made by each run,
 * because a sweep makes many runs in one thread: a closure made per run is a new call target
 * for the code V8 optimized in the run before, which it then threw away ("wrong call target")
 * and recompiled, the whole replay loop with everything inlined in it, at each run (about
 * 100 ms of compiler time a run, on a core the other threads of the sweep needed).
 */

/** The simulated now: moved by the replay, read by the runtime and the strategies. */
export class SimulatedClock implements Clock {
  constructor(public t: number) {}

  now(): number {
    return this.t;
  }

  // Handler time limits are real time.
  setTimeout(fn: () => void, ms: number): unknown {
    return systemClock.setTimeout(fn, ms);
  }

  clearTimeout(handle: unknown): void {
    systemClock.clearTimeout(handle);
  }
}

/** A strategy's book at market value: its equity and the part of it invested. */
class BookValue implements CloseSource {
  constructor(
    private readonly runtime: StrategyRuntime,
    private readonly name: string,
    private readonly market: ReplayMarket,
  ) {}

  closeAt(): Close {
    const book = this.runtime.book(this.name)!;
    let invested = 0;
    for (const p of book.positions) {
      const price = this.market.price(p.instrument);
      invested += price === undefined ? p.costUsd : price * p.quantity;
    }
    const value = book.cash + invested;
    return { value, exposure: value > 0 ? invested / value : 0 };
  }
}

/** An index's NAV as of its latest replayed point. */
class IndexNav implements CloseSource {
  constructor(
    private readonly market: ReplayMarket,
    private readonly indexId: string,
  ) {}

  closeAt(): Close {
    return { value: this.market.navAt(this.indexId)!.nav };
  }
}

export interface TimelineProgress {
  done: number;
  total: number;
  simNow: number;
}

/**
 * Feeds history moments and rebalancing status changes to the detector's market and the
 * event log in time order, moves the simulated clock, lets the strategies handle each
 * moment's events before the next, and keeps daily closes of the strategy's equity and of
 * each index's NAV.
 */
export class Timeline {
  /** Items replayed: history points and status changes. */
  done = 0;
  readonly equity: DailyCloses;
  readonly navs = new Map<string, DailyCloses>();
  private reported = 0;
  private groupAt: number | undefined;
  /** The events of a moment's points: one array for the whole replay, emptied at each moment. */
  private readonly made: IndexbotEvent[] = [];

  constructor(
    private readonly o: {
      clock: SimulatedClock;
      market: ReplayMarket;
      log: MemoryEventLog;
      runtime: StrategyRuntime;
      strategy: string;
      indexes: readonly string[];
      cash: number;
      total: number;
      onProgress?: (progress: TimelineProgress) => void;
    },
  ) {
    this.equity = new DailyCloses(new BookValue(o.runtime, o.strategy, o.market));
    this.equity.start(o.clock.t, { value: o.cash, exposure: 0 });
    for (const indexId of o.indexes) this.navs.set(indexId, new DailyCloses(new IndexNav(o.market, indexId)));
  }

  async replay(moments: Iterable<HistoryMoment>, transitions: Iterator<{ record: Rebalance; status: string; at: number }>): Promise<void> {
    const { market, log } = this.o;
    let transition = transitions.next();
    for (const moment of moments) {
      const ts = moment.ts;
      // A status change at the same time as a point comes first: the point already shows its result.
      for (; !transition.done && transition.value.at <= ts; transition = transitions.next()) {
        const t = transition.value;
        if (t.at !== this.groupAt) await this.moveTo(t.at);
        if (t.status === 'completed') market.completed(t.record);
        log.append(market.feed(t.record.index_id, [asObserved(t.record, t.status)], t.at));
        this.done++;
      }
      if (ts !== this.groupAt) await this.moveTo(ts);
      const made = this.made;
      made.length = 0;
      for (let p = 0; p < moment.indexIds.length; p++) {
        const closes = this.navs.get(moment.indexIds[p]!)!;
        if (closes.started) closes.advance(ts);
        else closes.start(ts, { value: moment.navs[p]! });
        market.point(moment, p, made);
        this.done++;
      }
      log.append(made);
    }
    await this.closeGroup();
    this.o.onProgress?.({ done: this.done, total: this.o.total, simNow: this.o.clock.t });
    this.equity.finish();
    for (const closes of this.navs.values()) if (closes.started) closes.finish();
  }

  private async moveTo(t: number): Promise<void> {
    await this.closeGroup();
    this.equity.advance(t);
    this.groupAt = t;
    this.o.clock.t = t;
  }

  /** The moment's events are all in the log: the strategies handle them before time moves on. */
  private async closeGroup(): Promise<void> {
    if (this.groupAt === undefined) return;
    if (this.o.log.hasNew()) await this.o.runtime.drain();
    if (this.done - this.reported >= 2_000) {
      this.reported = this.done;
      this.o.onProgress?.({ done: this.done, total: this.o.total, simNow: this.o.clock.t });
    }
  }
}

/** The record as the feed showed it while it had `status`. */
export function asObserved(r: Rebalance, status: string): Rebalance {
  return status === r.status ? r : { ...r, status: status as Rebalance['status'], completed_at: status === 'completed' ? r.completed_at : null };
}
