import Big from 'big.js';

/**
 * The paper ledger's arithmetic: cash, quantities, costs, fees and fill prices are exact
 * decimals, and every rounding rule is here, applied once per fill.
 *
 * - USD amounts (a fill's notional, its fee, the cost basis left after a partial sell, a
 *   position's value) are rounded to `USD_DP` decimals (micro-USD), half to even.
 * - A quantity given by the strategy is rounded to `QUANTITY_DP` decimals, half to even; a
 *   quantity bought or sold for a notional is rounded down (never more than the notional buys).
 * - A fill price (the market price moved by slippage) is exact: a price read as a number is
 *   taken at its shortest decimal form (`0.1` is 0.1, not its binary neighbour).
 * - Cash and positions then only add and subtract those amounts, exactly.
 *
 * Numbers that strategies read are views: the double nearest to the exact amount.
 */
export type Decimal = Big;

// A constructor of our own: these settings neither leak into nor come from another user of big.js.
const D = Big();
// The ledger divides only in quantityFor and usdShare, each to its own places: a division
// anywhere else would be a bug, and 60 places would keep it exact well past any rounding.
D.DP = 60;
D.RM = Big.roundHalfEven;
// Text never in exponent form: it is stored and compared as written.
D.NE = -1_000_000;
D.PE = 1_000_000;

/** Decimals of a USD amount: micro-USD. */
export const USD_DP = 6;
/** Decimals of a quantity: 1e-12 units of a 1e5 USD token is 1e-7 USD, below the USD unit. */
export const QUANTITY_DP = 12;

export const ZERO: Decimal = D(0);

/** A finite number at its shortest decimal form, or decimal text as stored. */
export function decimal(value: number | string): Decimal {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new RangeError(`Expected a finite number, got ${value}`);
  return D(value);
}

/** A USD amount at the ledger's unit. */
export function usd(value: Decimal): Decimal {
  return value.round(USD_DP, Big.roundHalfEven);
}

/** A quantity the strategy asked for, at the ledger's scale. */
export function quantity(value: Decimal): Decimal {
  return value.round(QUANTITY_DP, Big.roundHalfEven);
}

/** `x` as an integer count of 10^-places units: plain decimal text read as one BigInt. */
function scaled(x: Decimal): { units: bigint; places: number } {
  const text = x.toString();
  const dot = text.indexOf('.');
  return dot === -1 ? { units: BigInt(text), places: 0 } : { units: BigInt(text.slice(0, dot) + text.slice(dot + 1)), places: text.length - dot - 1 };
}

const TEN = 10n;

/**
 * The quantity `notionalUsd` buys at `price` (both positive), rounded down: the exact
 * quotient cut at QUANTITY_DP places, as one integer division (big.js divides digit by
 * digit: about 50 µs, a third of the paper broker's time per fill), then down to the first
 * quantity a number holds exactly ({@link numberExact}).
 */
export function quantityFor(notionalUsd: Decimal, price: Decimal): Decimal {
  const n = scaled(notionalUsd);
  const p = scaled(price);
  // (n.units / 10^n.places) / (p.units / 10^p.places) in units of 10^-QUANTITY_DP, truncated.
  const units = (n.units * TEN ** BigInt(p.places + QUANTITY_DP)) / (p.units * TEN ** BigInt(n.places));
  const digits = units.toString().padStart(QUANTITY_DP + 1, '0');
  const point = digits.length - QUANTITY_DP;
  return numberExact(D(`${digits.slice(0, point)}.${digits.slice(point)}`));
}

const float = new Float64Array(1);
const floatBits = new BigInt64Array(float.buffer);

/** The positive double next below `x`. */
function below(x: number): number {
  float[0] = x;
  floatBits[0]! -= 1n;
  return float[0]!;
}

/**
 * The largest quantity up to `q` (a positive one at QUANTITY_DP places) that a number holds
 * exactly: its shortest form. A fill's `quantity`, a number, then sells exactly what a fill
 * sized by notional bought (a quantity given as a number is one already). Past 16 significant digits (above about 4,096 units) a number cannot hold every
 * quantity the ledger can, and a strategy that bought twice and sold each fill's quantity
 * sold a few 1e-12 more or less than it bought: the last sale was refused, or left dust.
 * Where doubles are coarser than the ledger's unit any double's shortest form is at most
 * QUANTITY_DP places; below that, one or two steps down find one.
 */
function numberExact(q: Decimal): Decimal {
  // Past the largest number (a notional at a price near zero) no number holds it: kept as it is.
  for (let x = toNumber(q), step = 0; step < 4 && x > 0 && Number.isFinite(x); step++, x = below(x)) {
    const d = decimal(x);
    if (d.lte(q) && d.eq(d.round(QUANTITY_DP, Big.roundDown))) return d;
  }
  return q;
}

// One basis point: multiplying by it is exact, where a division by 10,000 would run to D's 60 places.
const BPS = D('0.0001');

/** `bps` basis points as a factor, exact: a fee rate, or 10,000 plus a slippage to move a price by. */
export function bpsFactor(bps: number): Decimal {
  return decimal(bps).times(BPS);
}

// The USD share of a cost, divided straight to USD_DP places, half to even (big.js rounds a
// quotient as the exact one would be): no 60-place division.
const UsdQuotient = Big();
UsdQuotient.DP = USD_DP;
UsdQuotient.RM = Big.roundHalfEven;
UsdQuotient.NE = D.NE;
UsdQuotient.PE = D.PE;

/** The part of `amountUsd` that `part` of `whole` carries, at the USD unit: the cost basis left after a partial sale. */
export function usdShare(amountUsd: Decimal, part: Decimal, whole: Decimal): Decimal {
  return D(UsdQuotient(amountUsd.times(part)).div(whole));
}

/** What `quantity` is worth at `price`: the rule for notionals and position values alike. */
export function valueAt(quantity: Decimal, price: Decimal | number): Decimal {
  return usd(quantity.times(typeof price === 'number' ? decimal(price) : price));
}

/** The view a strategy reads: the double nearest to the exact amount. */
export function toNumber(value: Decimal): number {
  return Number(value.toString());
}

/** Storage form: plain decimal text, no exponent, no trailing zeros. */
export function toText(value: Decimal): string {
  return value.toString();
}
