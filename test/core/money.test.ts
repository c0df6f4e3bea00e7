import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QUANTITY_DP, decimal, quantityFor } from '../../src/core/money.ts';

/** `text` (plain decimal) as an integer count of 10^-scale units. */
function scaled(text: string, scale: number): bigint {
  const [whole, fraction = ''] = text.split('.');
  return BigInt(whole! + fraction.padEnd(scale, '0').slice(0, scale));
}

describe('quantityFor', () => {
  it('is the exact quotient of notional by price, cut at QUANTITY_DP places', () => {
    const SCALE = 40;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000_000 }), fc.double({ min: 1e-6, max: 1e5, noNaN: true }), (micros, price) => {
        const notional = decimal(micros / 1e6);
        const p = decimal(price);
        // Exact floor in integers: notional / price * 10^QUANTITY_DP, both at SCALE places (more than either has).
        const floor = (scaled(notional.toString(), SCALE) * 10n ** BigInt(QUANTITY_DP)) / scaled(p.toString(), SCALE);
        expect(scaled(quantityFor(notional, p).toString(), QUANTITY_DP)).toBe(floor);
      }),
      { numRuns: 2_000 },
    );
  });
});
