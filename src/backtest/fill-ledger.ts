import { createHash } from 'node:crypto';
import type { TradeFill } from './metrics.ts';
import { carriedBy } from './lazy-list.ts';
import { TradeBook, type TradeRow } from './trades.ts';

/** A fill of a run, with the event whose handler made it. */
export type RunFill = TradeFill & { eventId: string };

const FIRST_CAPACITY = 1_024;

/**
 * A run's fills in columns, each booked as it comes: its realised P&L and holding time, the
 * running trade figures, the fills' hash. A fill kept as objects (the fill, its ledger row,
 * its report row) held about 500 bytes of a run's heap, and a 4-year run of 40 indexes made
 * 49,680 of them; here a fill is 53 bytes (up to twice that in columns grown by doubling) and its event's id,
 * which the fills of one event share.
 */
export class FillLedger {
  readonly book = new TradeBook();
  private size = 0;
  private at = new Float64Array(FIRST_CAPACITY);
  private quantity = new Float64Array(FIRST_CAPACITY);
  private price = new Float64Array(FIRST_CAPACITY);
  private feeUsd = new Float64Array(FIRST_CAPACITY);
  /** A sale's realised P&L; NaN for a buy. */
  private realised = new Float64Array(FIRST_CAPACITY);
  /** A sale's holding time; NaN for a buy, or a sale of nothing held. */
  private holding = new Float64Array(FIRST_CAPACITY);
  private instrument = new Uint32Array(FIRST_CAPACITY);
  private sell = new Uint8Array(FIRST_CAPACITY);
  private readonly eventIds: string[] = [];
  private readonly instruments: string[] = [];
  private readonly instrumentNumbers = new Map<string, number>();
  private digest: string | undefined;

  /** A ledger of fills given whole (a result made without one), booked in their order. */
  static of(fills: Iterable<RunFill>): FillLedger {
    const ledger = new FillLedger();
    for (const f of fills) ledger.add(f, f.eventId);
    return ledger;
  }

  get length(): number {
    return this.size;
  }

  /** Books a fill; fills come in time order. */
  add(f: TradeFill, eventId: string): void {
    if (this.digest !== undefined) throw new Error('FillLedger: a fill added after the hash was read');
    if (this.size === this.at.length) this.grow();
    const i = this.size++;
    const row = this.book.add(f);
    let n = this.instrumentNumbers.get(f.instrument);
    if (n === undefined) {
      n = this.instruments.push(f.instrument) - 1;
      this.instrumentNumbers.set(f.instrument, n);
    }
    this.at[i] = f.at;
    this.quantity[i] = f.quantity;
    this.price[i] = f.price;
    this.feeUsd[i] = f.feeUsd;
    this.realised[i] = row.realisedPnl ?? Number.NaN;
    this.holding[i] = row.holdingMs ?? Number.NaN;
    this.instrument[i] = n;
    this.sell[i] = f.side === 'sell' ? 1 : 0;
    this.eventIds.push(eventId);
  }

  /** The SHA-256 of `JSON.stringify(fills)`, fed a fill at a time (a long trade list is never one string); no fill is added after it is read. */
  get hash(): string {
    if (this.digest === undefined) {
      const hash = createHash('sha256').update('[');
      for (let i = 0; i < this.size; i++) hash.update(i === 0 ? JSON.stringify(this.fill(i)) : `,${JSON.stringify(this.fill(i))}`);
      this.digest = hash.update(']').digest('hex');
    }
    return this.digest;
  }

  /** Every instrument filled, in order of its first fill. */
  get instrumentsFilled(): readonly string[] {
    return this.instruments;
  }

  fill(i: number): RunFill {
    return {
      instrument: this.instruments[this.instrument[i]!]!,
      side: this.sell[i] === 1 ? 'sell' : 'buy',
      quantity: this.quantity[i]!,
      price: this.price[i]!,
      feeUsd: this.feeUsd[i]!,
      at: this.at[i]!,
      eventId: this.eventIds[i]!,
    };
  }

  /** The fill at `i` with what it realised. */
  row(i: number): TradeRow & { eventId: string } {
    const sale = this.sell[i] === 1;
    const holding = this.holding[i]!;
    return {
      instrument: this.instruments[this.instrument[i]!]!,
      side: sale ? 'sell' : 'buy',
      quantity: this.quantity[i]!,
      price: this.price[i]!,
      feeUsd: this.feeUsd[i]!,
      at: this.at[i]!,
      realisedPnl: sale ? this.realised[i]! : null,
      holdingMs: Number.isNaN(holding) ? null : holding,
      eventId: this.eventIds[i]!,
    };
  }

  /** The rows from `start`; a negative `start` counts from the end, as `slice` does. */
  *rows(start = 0): Generator<TradeRow & { eventId: string }, void, undefined> {
    for (let i = start < 0 ? Math.max(0, this.size + start) : start; i < this.size; i++) yield this.row(i);
  }

  /** Every fill as objects, in order. */
  fills(): RunFill[] {
    return Array.from({ length: this.size }, (_, i) => this.fill(i));
  }

  private grow(): void {
    const grown = <T extends Float64Array | Uint32Array | Uint8Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(a.length * 2);
      b.set(a);
      return b;
    };
    this.at = grown(this.at);
    this.quantity = grown(this.quantity);
    this.price = grown(this.price);
    this.feeUsd = grown(this.feeUsd);
    this.realised = grown(this.realised);
    this.holding = grown(this.holding);
    this.instrument = grown(this.instrument);
    this.sell = grown(this.sell);
  }
}

/** The ledger behind `holder[key]` ({@link withLazyList}) while that list was never read nor set. */
export function carriedLedger(holder: object, key: string): FillLedger | undefined {
  return carriedBy(holder, key, FillLedger);
}
