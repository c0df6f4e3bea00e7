import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type Decimal, ZERO, decimal, toNumber, valueAt } from '../../src/core/index.ts';
import { type PaperPosition, SnapshotStore } from '../../src/store/index.ts';
import { type Instrument, type OrderRequest, PaperBroker, type PaperBook, instrumentKey } from '../../src/strategy/index.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

/**
 * The paper ledger reconciles to the unit: over random order sequences (both sizings, prices
 * from 1e-9 to 1e5 USD, random fee and slippage, orders that must be refused), cash is the
 * initial cash less every buy's notional and fee plus every sale's notional less its fee,
 * exactly; each position is what was bought less what was sold, exactly; neither ever goes
 * below zero; and equity is cash plus each position at the ledger's valuation rule. Run on
 * an in-memory book and on the store's tables in a real SQLite file, which must agree.
 */

const TOKENS = ['A', 'B', 'C'] as const;
const token = (i: number): Instrument => ({ kind: 'token', address: TOKENS[i]! });

/** Log-uniform: every order of magnitude between 10^lo and 10^hi alike. */
const logUniform = (lo: number, hi: number) => fc.double({ min: lo, max: hi, noNaN: true }).map((e) => Number((10 ** e).toPrecision(12)));

type Op =
  | { op: 'price'; token: number; price: number }
  | { op: 'buy' | 'sell'; token: number; by: 'quantity' | 'notionalUsd'; amount: number }
  | { op: 'sellAll'; token: number }
  | { op: 'bad'; token: number; order: Record<string, unknown> };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ op: fc.constant('price' as const), token: fc.nat(2), price: logUniform(-9, 5) }) },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constantFrom('buy' as const, 'sell' as const),
      token: fc.nat(2),
      by: fc.constantFrom('quantity' as const, 'notionalUsd' as const),
      // Sizes from dust to far beyond the cash, so that some orders must be refused.
      amount: fc.oneof(logUniform(-14, 13), fc.double({ min: 0.01, max: 5_000, noNaN: true })),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('sellAll' as const), token: fc.nat(2) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('bad' as const),
      token: fc.nat(2),
      order: fc.constantFrom<Record<string, unknown>>({ quantity: -1 }, { quantity: 0 }, { notionalUsd: Number.NaN }, { quantity: Number.POSITIVE_INFINITY }, { quantity: 1, notionalUsd: 1 }, {}),
    }),
  },
);

const runArb = fc.record({
  initialCash: fc.integer({ min: 1, max: 100_000_000 }).map((cents) => cents / 100),
  feeBps: fc.oneof(fc.integer({ min: 0, max: 1_000 }), fc.double({ min: 0, max: 1_000, noNaN: true })),
  slippageBps: fc.oneof(fc.integer({ min: 0, max: 1_000 }), fc.double({ min: 0, max: 1_000, noNaN: true })),
  prices: fc.tuple(logUniform(-9, 5), logUniform(-9, 5), logUniform(-9, 5)),
  ops: fc.array(opArb, { minLength: 1, maxLength: 40 }),
});

interface Ledger {
  book: PaperBook;
  cash(): Decimal;
  positions(): PaperPosition[];
}

function memoryLedger(initialCash: number, price: (i: Instrument) => number | undefined): Ledger {
  let cash = decimal(initialCash);
  const positions = new Map<string, PaperPosition>();
  const open = () => [...positions.values()].filter((p) => p.quantity.gt(ZERO));
  return {
    book: {
      price,
      now: () => 0,
      cash: () => cash,
      setCash: (c) => (cash = c),
      position: (k) => positions.get(k),
      setPosition: (p) => positions.set(p.instrument, p),
      positions: open,
      recordFill: () => {},
    },
    cash: () => cash,
    positions: open,
  };
}

function sqliteLedger(store: SnapshotStore, account: string, initialCash: number, price: (i: Instrument) => number | undefined): Ledger {
  const t = store.strategies;
  t.openAccount(account, decimal(initialCash));
  const cash = () => t.account(account)!.cash;
  const positions = () => t.positions(account);
  return {
    book: {
      price,
      now: () => 0,
      cash,
      setCash: (c) => t.setCash(account, c),
      position: (k) => positions().find((p) => p.instrument === k),
      setPosition: (p) => t.setPosition(account, p),
      positions,
      recordFill: (f) => t.insertFill({ ...f, account, eventId: null }),
    },
    cash,
    positions,
  };
}

describe('paper ledger (property)', () => {
  const path = tempDbPath();
  const store = SnapshotStore.open(path);
  afterAll(() => store.close());
  let run = 0;
  // What the runs went through: the property is no proof if nothing filled or nothing was refused.
  const seen = new Map<string, number>();
  const count = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);

  it("sells back exactly what each fill bought, given each fill's quantity, in any order", async () => {
    // Plans that buy one token and each sell their own fill later: nothing refused, no dust.
    const buysArb = fc.array(fc.record({ by: fc.constantFrom('quantity' as const, 'notionalUsd' as const), amount: logUniform(-2, 9) }), { minLength: 2, maxLength: 5 });
    await fc.assert(
      fc.asyncProperty(logUniform(-9, 5), buysArb, fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 100 }), fc.func(fc.integer()), async (price, buys, feeBps, slippageBps, order) => {
        const memory = memoryLedger(1e15, () => price);
        const b = new PaperBroker(memory.book, { feeBps, slippageBps });
        const fills: number[] = [];
        for (const o of buys) {
          const r = await b.buy({ instrument: token(0), [o.by]: o.amount });
          if (r.status === 'filled') fills.push(r.fill.quantity);
        }
        fc.pre(fills.length >= 2);
        // A fill below the spacing of numbers at the position's size cannot be told from the
        // position by a number: selling the number the position reads as sells all of it.
        const total = fills.reduce((a, b) => a + b, 0);
        fc.pre(fills.every((q) => q > total * 2 ** -50));
        const sells = fills.map((q, i) => ({ q, key: order(i) })).sort((x, y) => x.key - y.key);
        for (const { q } of sells) expect(await b.sell({ instrument: token(0), quantity: q })).toMatchObject({ status: 'filled' });
        expect(memory.positions()).toEqual([]);
      }),
      { numRuns: 1_000 },
    );
  });

  it('reconciles cash and positions with the fills to the unit, in memory and in SQLite', async () => {
    await fc.assert(
      fc.asyncProperty(runArb, async (r) => {
        const account = `prop:${run++}`;
        const prices = [...r.prices];
        const price = (i: Instrument) => (i.kind === 'token' ? prices[TOKENS.indexOf(i.address as (typeof TOKENS)[number])] : undefined);
        const options = { feeBps: r.feeBps, slippageBps: r.slippageBps };
        const memory = memoryLedger(r.initialCash, price);
        const sqlite = sqliteLedger(store, account, r.initialCash, price);
        const brokers = [new PaperBroker(memory.book, options), new PaperBroker(sqlite.book, options)] as const;

        let expectedCash = decimal(r.initialCash);
        const expectedQty = new Map<string, Decimal>();
        for (const o of r.ops) {
          if (o.op === 'price') {
            prices[o.token] = o.price;
            continue;
          }
          const instrument = token(o.token);
          const key = instrumentKey(instrument);
          const results = [];
          for (const [i, b] of brokers.entries()) {
            const ledger = i === 0 ? memory : sqlite;
            const before = { cash: ledger.cash(), qty: ledger.positions().find((p) => p.instrument === key)?.quantity ?? ZERO };
            const viewQty = (await b.positions()).find((p) => p.instrument === key)?.quantity ?? 1;
            const result =
              o.op === 'bad'
                ? await b.buy({ instrument, ...o.order } as OrderRequest)
                : o.op === 'sellAll'
                  ? await b.sell({ instrument, quantity: viewQty })
                  : await b[o.op]({ instrument, [o.by]: o.amount });
            if (result.status === 'rejected') {
              // A refused order changes nothing.
              expect(ledger.cash().eq(before.cash)).toBe(true);
              expect((ledger.positions().find((p) => p.instrument === key)?.quantity ?? ZERO).eq(before.qty)).toBe(true);
            }
            results.push(result);
          }
          // Both books take the same decisions and make the same fills.
          expect(results[1]).toEqual(results[0]);
          count(results[0]!.status === 'filled' ? `filled ${o.op}` : results[0]!.code);
          if (o.op === 'bad') expect(results[0]!.status).toBe('rejected');
        }

        const fills = store.strategies.fills(account);
        for (const f of fills) {
          const notional = valueAt(f.quantity, f.price);
          const held = expectedQty.get(f.instrument) ?? ZERO;
          if (f.side === 'buy') {
            expectedCash = expectedCash.minus(notional).minus(f.feeUsd);
            expectedQty.set(f.instrument, held.plus(f.quantity));
          } else {
            expectedCash = expectedCash.plus(notional).minus(f.feeUsd);
            expectedQty.set(f.instrument, held.minus(f.quantity));
          }
          // Never below zero, at any fill.
          expect(expectedCash.gte(ZERO)).toBe(true);
          expect(expectedQty.get(f.instrument)!.gte(ZERO)).toBe(true);
        }
        for (const ledger of [memory, sqlite]) {
          expect(ledger.cash().toString()).toBe(expectedCash.toString());
          const held = new Map(ledger.positions().map((p) => [p.instrument, p.quantity.toString()]));
          const expected = new Map([...expectedQty].filter(([, q]) => q.gt(ZERO)).map(([k, q]) => [k, q.toString()]));
          expect(held).toEqual(expected);
        }
        // Equity: cash plus each position at the current price, by the one valuation rule.
        let equity = expectedCash;
        for (const [k, q] of expectedQty) equity = equity.plus(valueAt(q, prices[TOKENS.indexOf(k.slice('token:'.length) as (typeof TOKENS)[number])]!));
        for (const b of brokers) expect(await b.equity()).toBe(toNumber(equity));
      }),
      { numRuns: 2_000 },
    );
    for (const what of ['filled buy', 'filled sell', 'filled sellAll', 'insufficient_cash', 'insufficient_position', 'invalid_order']) {
      expect(seen.get(what) ?? 0, what).toBeGreaterThan(100);
    }
    // The file, reopened, reads back the same exact amounts.
    const reopened = SnapshotStore.open(path);
    try {
      for (const a of store.strategies.accounts()) {
        expect(reopened.strategies.account(a.account)!.cash.toString()).toBe(a.cash.toString());
        expect(reopened.strategies.positions(a.account).map((p) => [p.quantity.toString(), p.costUsd.toString()])).toEqual(
          store.strategies.positions(a.account).map((p) => [p.quantity.toString(), p.costUsd.toString()]),
        );
      }
    } finally {
      reopened.close();
    }
  }, 120_000);
});
