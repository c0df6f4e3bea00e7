import type { IndexbotEvent, NewEvent } from '../detect/index.ts';
import type { EventLog } from '../strategy/index.ts';

/**
 * The backtest's event log: in memory, one cursor per consumer. Delivered events are
 * dropped, so a long run holds only what is pending. Ids are unique without a set of every
 * id seen (which grew with the history): the live log drops a rebalance seen twice, by the
 * feed and in a composition, but a replay takes completions from the feed alone (see
 * ReplayMarket), the cache holds each status of a record once (its primary key) and the
 * replay reads each once, in time order; every other id carries its observation time.
 */
export class MemoryEventLog implements EventLog {
  private pending: IndexbotEvent[] = [];
  /** Seq of the event before `pending[0]`. */
  private base = 0;
  private readonly cursors = new Map<string, number>();
  private readonly byType: Record<string, number> = {};

  append(events: readonly NewEvent[]): void {
    for (const e of events) {
      // The detector's objects are ours alone: numbered in place, not copied.
      (e as IndexbotEvent).seq = this.base + this.pending.length + 1;
      // Read-only from here (the payload was frozen where it was made): the runtime trusts a frozen event.
      this.pending.push(Object.freeze(e) as IndexbotEvent);
      this.byType[e.type] = (this.byType[e.type] ?? 0) + 1;
    }
  }

  hasNew(): boolean {
    return this.pending.length > 0;
  }

  eventsAfter(seq: number, limit = 1000): IndexbotEvent[] {
    return this.pending.slice(seq - this.base, seq - this.base + limit);
  }

  cursor(consumer: string): number {
    return this.cursors.get(consumer) ?? 0;
  }

  setCursor(consumer: string, seq: number): void {
    this.cursors.set(consumer, seq);
    // A loop, not a spread into Math.min: this runs at every replayed moment.
    let slowest = Number.POSITIVE_INFINITY;
    for (const c of this.cursors.values()) if (c < slowest) slowest = c;
    const done = slowest - this.base;
    if (done >= this.pending.length) {
      this.base += this.pending.length;
      this.pending = [];
    }
  }

  counts(): Record<string, number> {
    return Object.fromEntries(Object.entries(this.byType).sort(([a], [b]) => a.localeCompare(b)));
  }
}
