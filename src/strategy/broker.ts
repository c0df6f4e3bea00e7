import { toNumber } from '../core/index.ts';
import type { PaperFill } from '../store/index.ts';

/** What can be traded: an index's units at the index value, or a constituent token at its price. */
export type Instrument = { kind: 'index'; indexId: string } | { kind: 'token'; address: string; symbol?: string };

export interface OrderRequest {
  instrument: Instrument;
  /** Units of the instrument; give this or `notionalUsd`. */
  quantity?: number | undefined;
  /** Size in USD at the current price, before fees. */
  notionalUsd?: number | undefined;
}

/**
 * One executed order: instrument key, side, quantity, price after slippage, fee, time. The
 * numbers are views of the exact ledger (the nearest doubles); the exact amounts are stored.
 */
export interface Fill {
  instrument: string;
  side: 'buy' | 'sell';
  quantity: number;
  price: number;
  feeUsd: number;
  at: number;
}

/** A fill as the ledger keeps it: exact amounts. */
export type LedgerFill = Omit<PaperFill, 'id' | 'account' | 'eventId'>;

export function fillView(f: LedgerFill): Fill {
  return { instrument: f.instrument, side: f.side, quantity: toNumber(f.quantity), price: toNumber(f.price), feeUsd: toNumber(f.feeUsd), at: f.at };
}

/** Why an order was refused, as a stable word a report can count by. */
export type RejectCode = 'no_price' | 'insufficient_cash' | 'insufficient_position' | 'invalid_order';

export type OrderResult = { status: 'filled'; fill: Fill } | { status: 'rejected'; reason: string; code: RejectCode };

/** A refused order as the runtime reports it. */
export interface Rejection {
  instrument: string;
  side: 'buy' | 'sell';
  code: RejectCode;
  reason: string;
  at: number;
}

/** A position as a strategy reads it: views of the exact ledger. */
export interface Position {
  instrument: string;
  /** Selling exactly this number sells the whole position, even where the view rounded. */
  quantity: number;
  /** What was paid for the units held, fees included. */
  costUsd: number;
  /** At the current price; undefined when no price is known. */
  valueUsd: number | undefined;
}

/**
 * Market orders against an account. The paper broker is the first implementation; a live
 * broker implements the same interface. Orders beyond cash or position are rejected with a
 * reason, never clipped. Amounts are numbers both ways: orders are read at their shortest
 * decimal form, and what comes back is the nearest double to the exact ledger amount.
 */
export interface Broker {
  buy(order: OrderRequest): Promise<OrderResult>;
  sell(order: OrderRequest): Promise<OrderResult>;
  cash(): Promise<number>;
  positions(): Promise<Position[]>;
  /** Cash plus positions at current prices. */
  equity(): Promise<number>;
}

export function instrumentKey(i: Instrument): string {
  return i.kind === 'index' ? `index:${i.indexId}` : `token:${i.address}`;
}

/** What people read for an instrument: an index's id, a token's symbol (its address when the cache knows no symbol for it). */
export function instrumentLabel(tokens: { tokenSymbol(address: string): string | undefined }, key: string): string {
  // A refused order's malformed instrument (`invalid:…`) reads as it was written.
  if (!key.startsWith('index:') && !key.startsWith('token:')) return key;
  const i = parseInstrument(key);
  return i.kind === 'index' ? i.indexId : (tokens.tokenSymbol(i.address) ?? i.address);
}

export function parseInstrument(key: string): Instrument {
  const [kind, id] = key.split(':', 2) as [string, string];
  return kind === 'index' ? { kind: 'index', indexId: id } : { kind: 'token', address: id };
}
