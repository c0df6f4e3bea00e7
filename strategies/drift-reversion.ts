/**
 * drift-reversion: when a constituent drifts from its target weight, trade it back toward
 * the target: buy what has fallen under its target, sell what has risen over it (if held).
 * The bet is that drift between rebalances mean-reverts, and that the next rebalance will
 * buy the underweight tokens anyway.
 *
 * Params:
 * - minDeviation: |weight - target| that triggers a trade, as a fraction (default 0.03)
 * - notionalUsd: USD per trade (default 250)
 */
import { defineStrategy } from 'indexbot';
import { z } from 'zod';

export default defineStrategy({
  name: 'drift-reversion',
  description: 'Buys constituents that drifted under their target weight, sells those that drifted over.',
  params: z.object({
    minDeviation: z.number().positive().max(1).default(0.03),
    notionalUsd: z.number().positive().default(250),
  }),
  on: {
    'composition.drift': async (event, ctx) => {
      const { address, symbol, deviation } = event.payload;
      if (Math.abs(deviation) < ctx.params.minDeviation) return;
      const instrument = { kind: 'token' as const, address, symbol };
      if (deviation < 0) {
        const r = await ctx.broker.buy({ instrument, notionalUsd: ctx.params.notionalUsd });
        if (r.status === 'rejected') ctx.log.info({ symbol, reason: r.reason }, 'buy rejected');
        return;
      }
      const held = (await ctx.broker.positions()).find((p) => p.instrument === `token:${address}`);
      if (!held) return;
      const price = ctx.data.tokenPrice(address);
      const quantity = price ? Math.min(held.quantity, ctx.params.notionalUsd / price) : held.quantity;
      const r = await ctx.broker.sell({ instrument, quantity });
      if (r.status === 'rejected') ctx.log.info({ symbol, reason: r.reason }, 'sell rejected');
    },
  },
});
