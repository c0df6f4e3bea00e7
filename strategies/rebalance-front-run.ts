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

/**
 * Each holding is a state key of its own and `nextSellAt` is the earliest time one is due:
 * most events only read that one number, so an event costs the same whether the strategy
 * holds three tokens or three hundred.
 */
const HOLDING = 'holding:';
const NEXT_SELL_AT = 'nextSellAt';

function hold(ctx: StrategyContext<z.output<typeof params>>, h: Holding): void {
  ctx.state.set(`${HOLDING}${h.rebalanceId}:${h.address}`, h);
  const next = ctx.state.get<number>(NEXT_SELL_AT);
  if (next === undefined || h.sellAfter < next) ctx.state.set(NEXT_SELL_AT, h.sellAfter);
}

/** Whether a holding is due for sale: most events find none, and their handler returns at once, without a promise. */
function anyDue(ctx: StrategyContext<z.output<typeof params>>): boolean {
  const next = ctx.state.get<number>(NEXT_SELL_AT);
  return next !== undefined && next <= ctx.clock.now();
}

async function sellDue(ctx: StrategyContext<z.output<typeof params>>): Promise<void> {
  if (!anyDue(ctx)) return;
  let earliest: number | undefined;
  for (const key of ctx.state.keys()) {
    if (!key.startsWith(HOLDING)) continue;
    const h = ctx.state.get<Holding>(key)!;
    if (h.sellAfter <= ctx.clock.now()) {
      const result = await ctx.broker.sell({ instrument: { kind: 'token', address: h.address }, quantity: h.quantity });
      if (result.status === 'filled') {
        ctx.state.delete(key);
        continue;
      }
      ctx.log.warn({ token: h.symbol, reason: result.reason }, 'could not sell; will try again');
    }
    earliest = earliest === undefined ? h.sellAfter : Math.min(earliest, h.sellAfter);
  }
  ctx.state.set(NEXT_SELL_AT, earliest);
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
      for (const c of candidates) {
        const result = await ctx.broker.buy({ instrument: { kind: 'token', address: c.address, symbol: c.symbol }, notionalUsd: ctx.params.notionalUsd });
        if (result.status === 'rejected') {
          ctx.log.info({ token: c.symbol, reason: result.reason }, 'buy rejected');
          continue;
        }
        hold(ctx, {
          address: c.address,
          symbol: c.symbol,
          quantity: result.fill.quantity,
          sellAfter: event.payload.effectiveAt + ctx.params.holdHours * 3_600_000,
          rebalanceId: event.payload.rebalanceId,
        });
      }
    },
    'rebalance.completed': (_event, ctx) => (anyDue(ctx) ? sellDue(ctx) : undefined),
    'performance.updated': (_event, ctx) => (anyDue(ctx) ? sellDue(ctx) : undefined),
  },
});
