import { type Decimal, ZERO, bpsFactor, checkOptionRange, decimal, quantityFor, quantity as roundQuantity, shortJson, toNumber, usd, usdShare, valueAt } from '../core/index.ts';
import type { PaperPosition } from '../store/index.ts';
import {
  type Broker,
  type Instrument,
  type LedgerFill,
  type OrderRequest,
  type OrderResult,
  type Position,
  type RejectCode,
  type Rejection,
  fillView,
  instrumentKey,
  parseInstrument,
} from './broker.ts';

export interface PaperBrokerOptions {
  /** @default 10000 */
  initialCash?: number;
  /** Fee on each fill's notional, in basis points (0 to 1000). @default 10 */
  feeBps?: number;
  /** Price moved against the order, in basis points (0 to 1000). @default 5 */
  slippageBps?: number;
}

/** The largest fee or slippage the broker takes: 10 %, the config's bound too. */
const MAX_BPS = 1_000;

/** Where the paper broker reads prices and keeps its exact book (see core/money.ts). */
export interface PaperBook {
  price(instrument: Instrument): number | undefined;
  now(): number;
  cash(): Decimal;
  setCash(cash: Decimal): void;
  position(instrument: string): PaperPosition | undefined;
  setPosition(position: PaperPosition): void;
  positions(): PaperPosition[];
  /** Receives each fill for the caller to persist with the event that caused it. */
  recordFill(fill: LedgerFill): void;
  /** Receives each refused order, for reports to count. */
  recordReject?(rejection: Rejection): void;
}

/**
 * Fills market orders at the current price moved by slippage, charges the fee on the
 * notional, and rejects (with a reason) an order it cannot fill in full. The ledger is exact:
 * each fill is rounded once, by the rules of core/money.ts, and cash and positions move by
 * exactly its amounts, so cash never goes below zero and a position is never oversold.
 */
export class PaperBroker implements Broker {
  readonly feeBps: number;
  readonly slippageBps: number;
  /** The fee and the price moves as exact factors, made once: a fill only multiplies. */
  private readonly feeRate: Decimal;
  private readonly buyMove: Decimal;
  private readonly sellMove: Decimal;

  constructor(
    private readonly book: PaperBook,
    options: PaperBrokerOptions = {},
  ) {
    this.feeBps = options.feeBps ?? 10;
    this.slippageBps = options.slippageBps ?? 5;
    checkOptionRange('feeBps', this.feeBps, { min: 0, max: MAX_BPS, integer: false });
    checkOptionRange('slippageBps', this.slippageBps, { min: 0, max: MAX_BPS, integer: false });
    this.feeRate = bpsFactor(this.feeBps);
    this.buyMove = bpsFactor(10_000 + this.slippageBps);
    this.sellMove = bpsFactor(10_000 - this.slippageBps);
  }

  async buy(order: OrderRequest): Promise<OrderResult> {
    return this.execute('buy', order);
  }

  async sell(order: OrderRequest): Promise<OrderResult> {
    return this.execute('sell', order);
  }

  async cash(): Promise<number> {
    return toNumber(this.book.cash());
  }

  async positions(): Promise<Position[]> {
    return this.book.positions().map((p) => {
      const value = this.value(p);
      return { instrument: p.instrument, quantity: toNumber(p.quantity), costUsd: toNumber(p.costUsd), valueUsd: value === undefined ? undefined : toNumber(value) };
    });
  }

  /** Cash plus each position at the current price (its cost where no price is known), exact, then viewed. */
  async equity(): Promise<number> {
    let total = this.book.cash();
    for (const p of this.book.positions()) total = total.plus(this.value(p) ?? p.costUsd);
    return toNumber(total);
  }

  private value(p: PaperPosition): Decimal | undefined {
    const price = this.book.price(parseInstrument(p.instrument));
    return price === undefined || !Number.isFinite(price) ? undefined : valueAt(p.quantity, price);
  }

  private execute(side: 'buy' | 'sell', order: OrderRequest): OrderResult {
    const problem = instrumentProblem(order?.instrument);
    const key = problem === undefined ? instrumentKey(order.instrument) : `invalid:${shortJson(order?.instrument)}`;
    const reject = (code: RejectCode, reason: string): OrderResult => {
      this.book.recordReject?.({ instrument: key, side, code, reason, at: this.book.now() });
      return { status: 'rejected', reason, code };
    };
    // A strategy's own bug (plain JavaScript, or a cast) says so, rather than looking like missing market data.
    if (problem !== undefined) return reject('invalid_order', problem);
    const market = this.book.price(order.instrument);
    if (market === undefined || !(market > 0) || !Number.isFinite(market)) return reject('no_price', `no price for ${key} at ${new Date(this.book.now()).toISOString()}`);
    const hasQty = order.quantity !== undefined;
    const hasNotional = order.notionalUsd !== undefined;
    if (hasQty === hasNotional) return reject('invalid_order', 'give exactly one of quantity or notionalUsd');
    const asked = hasQty ? order.quantity : order.notionalUsd;
    if (typeof asked !== 'number' || !Number.isFinite(asked) || asked <= 0) return reject('invalid_order', `${hasQty ? 'quantity' : 'notionalUsd'} must be a positive number, got ${String(asked)}`);
    const price = decimal(market).times(side === 'buy' ? this.buyMove : this.sellMove);
    const held = this.book.position(key) ?? { instrument: key, quantity: ZERO, costUsd: ZERO };
    // The number a strategy read as its position sells all of it, even where the view rounded.
    const quantity = !hasQty ? quantityFor(decimal(asked), price) : side === 'sell' && asked === toNumber(held.quantity) ? held.quantity : roundQuantity(decimal(asked));
    if (quantity.lte(ZERO)) return reject('invalid_order', `${hasQty ? 'quantity' : 'notionalUsd'} ${asked} is less than the smallest quantity the ledger keeps`);
    const notional = valueAt(quantity, price);
    const fee = usd(notional.times(this.feeRate));
    const cash = this.book.cash();
    if (side === 'buy') {
      const total = notional.plus(fee);
      if (total.gt(cash)) return reject('insufficient_cash', `needs ${total.toFixed(2)} USD with fees, cash is ${cash.toFixed(2)} USD`);
      this.book.setCash(cash.minus(total));
      this.book.setPosition({ instrument: key, quantity: held.quantity.plus(quantity), costUsd: held.costUsd.plus(total) });
    } else {
      if (quantity.gt(held.quantity)) return reject('insufficient_position', `sells ${quantity.toString()} of ${key}, holds ${held.quantity.toString()}`);
      const remaining = held.quantity.minus(quantity);
      this.book.setCash(cash.plus(notional).minus(fee));
      const costLeft = remaining.eq(ZERO) ? ZERO : usdShare(held.costUsd, remaining, held.quantity);
      this.book.setPosition({ instrument: key, quantity: remaining, costUsd: costLeft });
    }
    const fill: LedgerFill = { instrument: key, side, quantity, price, feeUsd: fee, at: this.book.now() };
    this.book.recordFill(fill);
    return { status: 'filled', fill: fillView(fill) };
  }
}

/** Why an order's instrument cannot be traded as given, or undefined when it can. */
function instrumentProblem(i: unknown): string | undefined {
  const shape = "instrument must be { kind: 'index', indexId } or { kind: 'token', address }";
  if (typeof i !== 'object' || i === null) return `${shape}, got ${shortJson(i)}`;
  const { kind, indexId, address } = i as Record<string, unknown>;
  const named = (field: string, value: unknown) =>
    typeof value === 'string' && value !== '' ? undefined : `${kind === 'index' ? 'an index' : 'a token'} instrument needs ${field} (a non-empty string), got ${shortJson(value)}`;
  if (kind === 'index') return named('indexId', indexId);
  if (kind === 'token') return named('address', address);
  return `${shape}, got kind ${shortJson(kind)}`;
}
