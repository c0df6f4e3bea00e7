import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QUANTITY_DP, bpsFactor, decimal, quantityFor, usdShare } from '../../src/core/money.ts';

/** `text` (plain decimal) as an integer count of 10^-scale units. */
function scaled(text: string, scale: number): bigint {
  const [whole, fraction = ''] = text.split('.');
  return BigInt(whole! + fraction.padEnd(scale, '0').slice(0, scale));
}

describe('quantityFor', () => {
  it('is the exact quotient of notional by price cut at QUANTITY_DP places, down to the first quantity a number holds exactly', () => {
    const SCALE = 40;
    const UNITS_4096 = 4096n * 10n ** BigInt(QUANTITY_DP);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000_000 }), fc.double({ min: 1e-6, max: 1e5, noNaN: true }), (micros, price) => {
        const notional = decimal(micros / 1e6);
        const p = decimal(price);
        // Exact floor in integers: notional / price * 10^QUANTITY_DP, both at SCALE places (more than either has).
        const floor = (scaled(notional.toString(), SCALE) * 10n ** BigInt(QUANTITY_DP)) / scaled(p.toString(), SCALE);
        const q = quantityFor(notional, p);
        const text = q.toFixed();
        expect(text.split('.')[1]?.length ?? 0).toBeLessThanOrEqual(QUANTITY_DP);
        const units = scaled(text, QUANTITY_DP);
        // A fill's quantity, as a number, is the ledger's quantity.
        expect(decimal(Number(text)).eq(q)).toBe(true);
        expect(units <= floor).toBe(true);
        // Below 4,096 a number holds every quantity at QUANTITY_DP places; above, the nearest one down is within a few of its last places.
        if (floor < UNITS_4096) expect(units).toBe(floor);
        else expect(Number(floor - units)).toBeLessThanOrEqual(Math.ceil((3 * Number(text) * 2 ** -52) / 10 ** -QUANTITY_DP));
      }),
      { numRuns: 2_000 },
    );
  });

  it('keeps a quantity past the largest number as it is', () => {
    // 1e9 USD at 1e-300 USD: no number holds it, and none needs to be found.
    expect(quantityFor(decimal(1e9), decimal('1e-300')).toFixed()).toBe(`1${'0'.repeat(309)}`);
  });
});

describe('usdShare and bpsFactor', () => {
  it('round a cost share to the micro-USD half to even, as the exact quotient would be, and move a price exactly', () => {
    // 0.000005 * 1 / 2 = 0.0000025: a tie, to even
    expect(usdShare(decimal('0.000005'), decimal(1), decimal(2)).toString()).toBe('0.000002');
    // 0.000007 * 1 / 2 = 0.0000035: a tie, to even (up)
    expect(usdShare(decimal('0.000007'), decimal(1), decimal(2)).toString()).toBe('0.000004');
    // Just above a tie: up, though the digits kept stop at the tie
    expect(usdShare(decimal('0.0000050001'), decimal(1), decimal(2)).toString()).toBe('0.000003');
    expect(usdShare(decimal('201.201'), decimal(1), decimal(3)).toString()).toBe('67.067');
    expect(decimal(1e-9).times(bpsFactor(10_005)).toString()).toBe('0.0000000010005');
    expect(
      decimal(100)
        .times(bpsFactor(10_000 - 2.5))
        .toString(),
    ).toBe('99.975');
  });
});
