import { describe, expect, it } from 'vitest';
import type { PaperPosition } from '../../src/store/index.ts';
import { type Instrument, PaperBroker, type Rejection } from '../../src/strategy/index.ts';

function broker(prices: Record<string, number>, cash = 1_000, options = { feeBps: 10, slippageBps: 50 }) {
  const positions = new Map<string, PaperPosition>();
  let balance = cash;
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
      positions: () => [...positions.values()].filter((p) => p.quantity > 0),
      recordFill: (f) => fills.push(f),
      recordReject: (r) => rejects.push(r),
    },
    options,
  );
  return { b, positions, fills, rejects, cash: () => balance };
}

const token = (address: string): Instrument => ({ kind: 'token', address });

describe('PaperBroker', () => {
  it('buys at the price plus slippage and charges the fee on the notional', async () => {
    const { b, cash, positions } = broker({ SOL: 100 });
    const r = await b.buy({ instrument: token('SOL'), quantity: 2 });
    expect(r.status).toBe('filled');
    if (r.status !== 'filled') return;
    expect(r.fill.price).toBeCloseTo(100.5, 10); // 50 bps against the buyer
    expect(r.fill.feeUsd).toBeCloseTo(0.201, 10); // 10 bps of 201
    expect(cash()).toBeCloseTo(1_000 - 201 - 0.201, 10);
    expect(positions.get('token:SOL')).toMatchObject({ instrument: 'token:SOL', quantity: 2 });
    expect(positions.get('token:SOL')!.costUsd).toBeCloseTo(201.201, 10);
  });

  it('sells at the price minus slippage, keeps the cost basis of what is left', async () => {
    const { b, cash, positions } = broker({ SOL: 100 });
    await b.buy({ instrument: token('SOL'), quantity: 2 });
    const before = cash();
    const r = await b.sell({ instrument: token('SOL'), quantity: 1 });
    if (r.status !== 'filled') throw new Error(r.reason);
    expect(r.fill.price).toBeCloseTo(99.5, 10);
    expect(cash() - before).toBeCloseTo(99.5 - 0.0995, 10);
    expect(positions.get('token:SOL')!.costUsd).toBeCloseTo(201.201 / 2, 10);
  });

  it('sizes by notional', async () => {
    const { b } = broker({ idx: 1_000 }, 1_000, { feeBps: 0, slippageBps: 0 });
    const r = await b.buy({ instrument: { kind: 'index', indexId: 'idx' }, notionalUsd: 250 });
    if (r.status !== 'filled') throw new Error(r.reason);
    expect(r.fill.quantity).toBeCloseTo(0.25, 12);
  });

  it('rejects, with a reason and without clipping, what it cannot fill in full', async () => {
    const { b, cash, positions, fills, rejects } = broker({ SOL: 100 });
    const tooBig = await b.buy({ instrument: token('SOL'), quantity: 10 });
    expect(tooBig).toEqual({ status: 'rejected', code: 'insufficient_cash', reason: expect.stringMatching(/needs 1006\.0\d USD with fees, cash is 1000\.00 USD/) });
    expect(await b.sell({ instrument: token('SOL'), quantity: 1 })).toMatchObject({ status: 'rejected', code: 'insufficient_position', reason: expect.stringMatching(/holds 0/) });
    expect(await b.buy({ instrument: token('NOPRICE'), quantity: 1 })).toMatchObject({ status: 'rejected', code: 'no_price', reason: expect.stringMatching(/no price/) });
    expect(await b.buy({ instrument: token('SOL'), quantity: 1, notionalUsd: 5 })).toMatchObject({ status: 'rejected', code: 'invalid_order' });
    expect(await b.buy({ instrument: token('SOL'), quantity: -1 })).toMatchObject({ status: 'rejected', code: 'invalid_order' });
    expect(cash()).toBe(1_000);
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

  it('values equity at current prices', async () => {
    const prices = { SOL: 100 };
    const { b } = broker(prices, 1_000, { feeBps: 0, slippageBps: 0 });
    await b.buy({ instrument: token('SOL'), quantity: 5 });
    prices.SOL = 120;
    expect(await b.equity()).toBeCloseTo(500 + 600, 10);
  });

  it('checks its options', () => {
    expect(() => broker({}, 1, { feeBps: -1, slippageBps: 0 })).toThrow(/`feeBps`.*got `-1`/);
  });
});
