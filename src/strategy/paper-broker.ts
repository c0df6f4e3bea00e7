import type { PaperPosition } from '../store/index.ts';
import { type Broker, type Fill, type Instrument, type OrderRequest, type OrderResult, type Position, type RejectCode, type Rejection, instrumentKey, parseInstrument } from './broker.ts';

export interface PaperBrokerOptions {
  /** @default 10000 */
  initialCash?: number;
  /** Fee on each fill's notional, in basis points. @default 10 */
  feeBps?: number;
  /** Price moved against the order, in basis points. @default 5 */
  slippageBps?: number;
}

/** Where the paper broker reads prices and keeps its book. */
export interface PaperBook {
  price(instrument: Instrument): number | undefined;
  now(): number;
  cash(): number;
  setCash(cash: number): void;
  position(instrument: string): PaperPosition | undefined;
  setPosition(position: PaperPosition): void;
  positions(): PaperPosition[];
  /** Receives each fill for the caller to persist with the event that caused it. */
  recordFill(fill: Fill): void;
  /** Receives each refused order, for reports to count. */
  recordReject?(rejection: Rejection): void;
}

const EPS = 1e-9;

/**
 * Fills market orders at the current price moved by slippage, charges the fee on the
 * notional, and rejects (with a reason) an order it cannot fill in full.
 */
export class PaperBroker implements Broker {
  readonly feeBps: number;
  readonly slippageBps: number;

  constructor(
    private readonly book: PaperBook,
    options: PaperBrokerOptions = {},
  ) {
    this.feeBps = options.feeBps ?? 10;
    this.slippageBps = options.slippageBps ?? 5;
    for (const [name, v] of [
      ['feeBps', this.feeBps],
      ['slippageBps', this.slippageBps],
    ] as const) {
      if (!Number.isFinite(v) || v < 0) throw new TypeError(`Expected \`${name}\` to be a number >= 0, got \`${String(v)}\``);
    }
  }

  async buy(order: OrderRequest): Promise<OrderResult> {
    return this.execute('buy', order);
  }

  async sell(order: OrderRequest): Promise<OrderResult> {
    return this.execute('sell', order);
  }

  async cash(): Promise<number> {
    return this.book.cash();
  }

  async positions(): Promise<Position[]> {
    return this.book.positions().map((p) => {
      const price = this.book.price(parseInstrument(p.instrument));
      return { instrument: p.instrument, quantity: p.quantity, costUsd: p.costUsd, valueUsd: price === undefined ? undefined : price * p.quantity };
    });
  }

  async equity(): Promise<number> {
    const positions = await this.positions();
    return this.book.cash() + positions.reduce((s, p) => s + (p.valueUsd ?? p.costUsd), 0);
  }

  private execute(side: 'buy' | 'sell', order: OrderRequest): OrderResult {
    const key = instrumentKey(order.instrument);
    const reject = (code: RejectCode, reason: string): OrderResult => {
      this.book.recordReject?.({ instrument: key, side, code, reason, at: this.book.now() });
      return { status: 'rejected', reason, code };
    };
    const market = this.book.price(order.instrument);
    if (market === undefined || !(market > 0)) return reject('no_price', `no price for ${key} at ${new Date(this.book.now()).toISOString()}`);
    const hasQty = order.quantity !== undefined;
    const hasNotional = order.notionalUsd !== undefined;
    if (hasQty === hasNotional) return reject('invalid_order', 'give exactly one of quantity or notionalUsd');
    const price = market * (1 + ((side === 'buy' ? 1 : -1) * this.slippageBps) / 10_000);
    const quantity = hasQty ? order.quantity! : order.notionalUsd! / price;
    if (!Number.isFinite(quantity) || quantity <= 0) return reject('invalid_order', `quantity must be positive, got ${quantity}`);
    const notional = quantity * price;
    const fee = (notional * this.feeBps) / 10_000;
    const held = this.book.position(key) ?? { instrument: key, quantity: 0, costUsd: 0 };
    const cash = this.book.cash();
    if (side === 'buy') {
      if (notional + fee > cash + EPS) {
        return reject('insufficient_cash', `needs ${(notional + fee).toFixed(2)} USD with fees, cash is ${cash.toFixed(2)} USD`);
      }
      this.book.setCash(cash - notional - fee);
      this.book.setPosition({ instrument: key, quantity: held.quantity + quantity, costUsd: held.costUsd + notional + fee });
    } else {
      if (quantity > held.quantity + EPS) return reject('insufficient_position', `sells ${quantity} of ${key}, holds ${held.quantity}`);
      const remaining = held.quantity - quantity;
      this.book.setCash(cash + notional - fee);
      const costLeft = remaining <= EPS ? 0 : held.costUsd * (remaining / held.quantity);
      this.book.setPosition({ instrument: key, quantity: remaining <= EPS ? 0 : remaining, costUsd: costLeft });
    }
    const fill: Fill = { instrument: key, side, quantity, price, feeUsd: fee, at: this.book.now() };
    this.book.recordFill(fill);
    return { status: 'filled', fill };
  }
}
