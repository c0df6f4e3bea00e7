/**
 * rebalance-front-run: when a rebalance is announced, buy the tokens the index will add or
 * weigh more, ahead of the index's own buying at effective_at; sell each holding once
 * effective_at plus a holding period has passed.
 *
 * Params:
 * - notionalUsd: USD per token bought (default 500)
 * - minIncrease: smallest target weight increase worth trading, as a fraction (default 0.005)
 * - maxTokens: most tokens bought per rebalance, largest increases first (default 3)
 * - holdHours: hours after effective_at before selling (default 24)
 */
import { type StrategyContext, defineStrategy } from 'indexbot';
import { z } from 'zod';

const params = z.object({
  notionalUsd: z.number().positive().default(500),
  minIncrease: z.number().min(0).max(1).default(0.005),
  maxTokens: z.number().int().positive().default(3),
  holdHours: z.number().nonnegative().default(24),
});

interface Holding {
  address: string;
  symbol: string;
  quantity: number;
  sellAfter: number;
  rebalanceId: string;
}

async function sellDue(ctx: StrategyContext<z.output<typeof params>>): Promise<void> {
  const holdings = ctx.state.get<Holding[]>('holdings') ?? [];
  const keep: Holding[] = [];
  for (const h of holdings) {
    if (h.sellAfter > ctx.clock.now()) {
      keep.push(h);
      continue;
    }
    const result = await ctx.broker.sell({ instrument: { kind: 'token', address: h.address }, quantity: h.quantity });
    if (result.status === 'rejected') {
      ctx.log.warn({ token: h.symbol, reason: result.reason }, 'could not sell; will try again');
      keep.push(h);
    }
  }
  ctx.state.set('holdings', keep);
}

export default defineStrategy({
  name: 'rebalance-front-run',
  description: 'Buys what an announced rebalance adds or increases; sells after effective_at plus a holding period.',
  params,
  on: {
    'rebalance.announced': async (event, ctx) => {
      await sellDue(ctx);
      if (event.payload.effectiveAt <= ctx.clock.now()) return;
      const candidates = event.payload.changes
        .filter((c) => (c.action === 'add' || c.action === 'increase') && c.newWeight - c.oldWeight >= ctx.params.minIncrease)
        .sort((a, b) => b.newWeight - b.oldWeight - (a.newWeight - a.oldWeight))
        .slice(0, ctx.params.maxTokens);
      const holdings = ctx.state.get<Holding[]>('holdings') ?? [];
      for (const c of candidates) {
        const result = await ctx.broker.buy({ instrument: { kind: 'token', address: c.address, symbol: c.symbol }, notionalUsd: ctx.params.notionalUsd });
        if (result.status === 'rejected') {
          ctx.log.info({ token: c.symbol, reason: result.reason }, 'buy rejected');
          continue;
        }
        holdings.push({
          address: c.address,
          symbol: c.symbol,
          quantity: result.fill.quantity,
          sellAfter: event.payload.effectiveAt + ctx.params.holdHours * 3_600_000,
          rebalanceId: event.payload.rebalanceId,
        });
      }
      ctx.state.set('holdings', holdings);
    },
    'rebalance.completed': async (_event, ctx) => sellDue(ctx),
    'performance.updated': async (_event, ctx) => sellDue(ctx),
  },
});
