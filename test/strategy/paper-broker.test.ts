import { describe, expect, it } from 'vitest';
import { type Decimal, ZERO, decimal } from '../../src/core/index.ts';
import type { PaperPosition } from '../../src/store/index.ts';
import { type Instrument, PaperBroker, type Rejection, instrumentLabel } from '../../src/strategy/index.ts';

function broker(prices: Record<string, number>, cash = 1_000, options = { feeBps: 10, slippageBps: 50 }) {
  const positions = new Map<string, PaperPosition>();
  let balance: Decimal = decimal(cash);
  const fills: unknown[] = [];
  const rejects: Rejection[] = [];
  const b = new PaperBroker(
    {
      price: (i: Instrument) => prices[i.kind === 'index' ? i.indexId : i.address],
      now: () => 1_000,
      cash: () => balance,
      setCash: (v) => (balance = v),
      position: (k) => positions.get(k),
      setPosition: (p) => positions.set(p.instrument, p),
      positions: () => [...positions.values()].filter((p) => p.quantity.gt(ZERO)),
      recordFill: (f) => fills.push(f),
      recordReject: (r) => rejects.push(r),
    },
    options,
  );
  return { b, positions, fills, rejects, cash: () => balance.toString() };
}

const token = (address: string): Instrument => ({ kind: 'token', address });

describe('PaperBroker', () => {
  it('buys at the price plus slippage and charges the fee on the notional', async () => {
    const { b, cash, positions } = broker({ SOL: 100 });
    const r = await b.buy({ instrument: token('SOL'), quantity: 2 });
    expect(r.status).toBe('filled');
    if (r.status !== 'filled') return;
    expect(r.fill.price).toBe(100.5); // 50 bps against the buyer
    expect(r.fill.feeUsd).toBe(0.201); // 10 bps of 201
    expect(cash()).toBe('798.799'); // exact: 1000 - 201 - 0.201 is 798.7990000000001 in doubles
    expect(positions.get('token:SOL')!.quantity.toString()).toBe('2');
    expect(positions.get('token:SOL')!.costUsd.toString()).toBe('201.201');
  });

  it('sells at the price minus slippage, keeps the cost basis of what is left', async () => {
    const { b, cash, positions } = broker({ SOL: 100 });
    await b.buy({ instrument: token('SOL'), quantity: 2 });
    const r = await b.sell({ instrument: token('SOL'), quantity: 1 });
    if (r.status !== 'filled') throw new Error(r.reason);
    expect(r.fill.price).toBe(99.5);
    expect(cash()).toBe('898.1995'); // 798.799 + 99.5 - 0.0995
    // Half of 201.201 is 100.6005: at the micro-USD unit, half to even.
    expect(positions.get('token:SOL')!.costUsd.toString()).toBe('100.6005');
  });

  it('sizes by notional', async () => {
    const { b } = broker({ idx: 1_000 }, 1_000, { feeBps: 0, slippageBps: 0 });
    const r = await b.buy({ instrument: { kind: 'index', indexId: 'idx' }, notionalUsd: 250 });
    if (r.status !== 'filled') throw new Error(r.reason);
    expect(r.fill.quantity).toBe(0.25);
  });

  it("rounds a fill once: notional and fee to the micro-USD half to even, a notional order's quantity down", async () => {
    const { b, cash, positions } = broker({ X: 3 }, 1_000, { feeBps: 10, slippageBps: 0 });
    const r = await b.buy({ instrument: token('X'), notionalUsd: 100 });
    if (r.status !== 'filled') throw new Error(r.reason);
    expect(r.fill.quantity).toBe(33.333333333333); // 100 / 3, down at 12 decimals
    // notional 99.999999999999 -> 100.000000 (micro-USD), fee 0.1
    expect(cash()).toBe('899.9');
    expect(positions.get('token:X')!.costUsd.toString()).toBe('100.1');
  });

  it('sells the whole position when given the quantity it reads, though the number view rounded', async () => {
    const { b, positions } = broker({ CHEAP: 1e-8 }, 100_000, { feeBps: 0, slippageBps: 0 });
    await b.buy({ instrument: token('CHEAP'), quantity: 1_234_567_890 });
    // 22 significant digits: the double cannot hold them all, the ledger does.
    positions.set('token:CHEAP', { ...positions.get('token:CHEAP')!, quantity: decimal('1234567890.123456789012') });
    const [view] = await b.positions();
    expect(view!.quantity).toBe(1_234_567_890.1234567);
    const r = await b.sell({ instrument: token('CHEAP'), quantity: view!.quantity });
    expect(r.status).toBe('filled');
    expect(positions.get('token:CHEAP')!.quantity.toString()).toBe('0');
  });

  it("sells exactly what a fill bought when given the fill's quantity, with another fill of the token held", async () => {
    // Two plans buy the same token by notional, then each sells its own fill's quantity. The
    // quantities have 16-17 significant digits: as numbers they rounded, and the second sale
    // was refused (a few 1e-12 more than was left) or left that much behind.
    for (const [price, first, second] of [
      [0.082396, 1795.05, 851.37],
      [0.0262, 3534.32, 174.93],
      [0.031191, 4397.98, 256.72],
    ] as const) {
      const { b, positions } = broker({ T: price }, 10_000, { feeBps: 10, slippageBps: 0 });
      const bought = [await b.buy({ instrument: token('T'), notionalUsd: first }), await b.buy({ instrument: token('T'), notionalUsd: second })];
      const sold = [];
      for (const r of bought) {
        if (r.status !== 'filled') throw new Error(r.reason);
        sold.push(await b.sell({ instrument: token('T'), quantity: r.fill.quantity }));
      }
      expect(sold.map((r) => r.status)).toEqual(['filled', 'filled']);
      expect(positions.get('token:T')!.quantity.toString()).toBe('0');
    }
  });

  it('rejects, with a reason and without clipping, what it cannot fill in full', async () => {
    const { b, cash, positions, fills, rejects } = broker({ SOL: 100 });
    const tooBig = await b.buy({ instrument: token('SOL'), quantity: 10 });
    expect(tooBig).toEqual({ status: 'rejected', code: 'insufficient_cash', reason: expect.stringMatching(/needs 1006\.0\d USD with fees, cash is 1000\.00 USD/) });
    expect(await b.sell({ instrument: token('SOL'), quantity: 1 })).toMatchObject({ status: 'rejected', code: 'insufficient_position', reason: expect.stringMatching(/holds 0/) });
    expect(await b.buy({ instrument: token('NOPRICE'), quantity: 1 })).toMatchObject({ status: 'rejected', code: 'no_price', reason: expect.stringMatching(/no price/) });
    expect(await b.buy({ instrument: token('SOL'), quantity: 1, notionalUsd: 5 })).toMatchObject({ status: 'rejected', code: 'invalid_order' });
    expect(await b.buy({ instrument: token('SOL'), quantity: -1 })).toMatchObject({ status: 'rejected', code: 'invalid_order' });
    expect(cash()).toBe('1000');
    expect(positions.size).toBe(0);
    expect(fills).toEqual([]);
    expect(rejects.map((r) => [r.code, r.side, r.instrument, r.at])).toEqual([
      ['insufficient_cash', 'buy', 'token:SOL', 1_000],
      ['insufficient_position', 'sell', 'token:SOL', 1_000],
      ['no_price', 'buy', 'token:NOPRICE', 1_000],
      ['invalid_order', 'buy', 'token:SOL', 1_000],
      ['invalid_order', 'buy', 'token:SOL', 1_000],
    ]);
  });

  it('refuses a malformed instrument as invalid_order naming what is wrong, not as a missing price (found by a trial)', async () => {
    const { b, cash, rejects } = broker({ SOL: 100 });
    const malformed = [{ kind: 'idx', indexId: 'sindex' }, { kind: 'index' }, { kind: 'token', address: '' }, null] as unknown as Instrument[];
    const results = [];
    for (const instrument of malformed) results.push(await b.buy({ instrument, quantity: 1 }));
    expect(results.map((r) => (r.status === 'rejected' ? `${r.code}: ${r.reason}` : r.status))).toEqual([
      `invalid_order: instrument must be { kind: 'index', indexId } or { kind: 'token', address }, got kind "idx"`,
      'invalid_order: an index instrument needs indexId (a non-empty string), got undefined',
      'invalid_order: a token instrument needs address (a non-empty string), got ""',
      `invalid_order: instrument must be { kind: 'index', indexId } or { kind: 'token', address }, got null`,
    ]);
    expect(rejects.map((r) => r.instrument)).toEqual(['invalid:{"kind":"idx","indexId":"sindex"}', 'invalid:{"kind":"index"}', 'invalid:{"kind":"token","address":""}', 'invalid:null']);
    // A report labels it as written (a token's label would be its symbol).
    expect(instrumentLabel({ tokenSymbol: () => 'SOL' }, rejects[0]!.instrument)).toBe('invalid:{"kind":"idx","indexId":"sindex"}');
    expect(cash()).toBe('1000');
  });

  it('values equity at current prices', async () => {
    const prices = { SOL: 100 };
    const { b } = broker(prices, 1_000, { feeBps: 0, slippageBps: 0 });
    await b.buy({ instrument: token('SOL'), quantity: 5 });
    prices.SOL = 120;
    expect(await b.equity()).toBe(500 + 600);
  });

  it('checks its options', () => {
    expect(() => broker({}, 1, { feeBps: -1, slippageBps: 0 })).toThrow(/`feeBps` to be a number from 0 to 1000, got `-1`/);
    expect(() => broker({}, 1, { feeBps: 0, slippageBps: 1_001 })).toThrow(/`slippageBps` to be a number from 0 to 1000, got `1001`/);
  });
});
