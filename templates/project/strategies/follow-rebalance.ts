/**
 * follow-rebalance: buys the tokens an announced rebalance adds or weighs more, before it
 * takes effect, and sells them when it completes (or is cancelled). A starting point: change
 * it, or add your own with `npx indexbot new-strategy NAME`.
 */
import { type StrategyContext, defineStrategy } from 'indexbot';
import { z } from 'zod';

const params = z.object({
  notionalUsd: z.number().positive().default(250),
  maxTokens: z.number().int().positive().default(2),
});

/** What one rebalance made us buy, kept in `ctx.state` under `plan:<rebalance id>`. */
interface Plan {
  effectiveAt: number;
  toBuy: { address: string; symbol: string }[];
  /** Token address to quantity held. */
  bought: Record<string, number>;
}

type Ctx = StrategyContext<z.output<typeof params>>;

/** Buys what the plans still want; a token without a price yet waits for the next event (no order the broker would refuse). */
async function buyPending(ctx: Ctx): Promise<void> {
  for (const key of ctx.state.keys().filter((k) => k.startsWith('plan:'))) {
    const plan = ctx.state.get<Plan>(key)!;
    if (plan.toBuy.length === 0) continue;
    const stillToBuy: Plan['toBuy'] = [];
    for (const token of ctx.clock.now() < plan.effectiveAt ? plan.toBuy : []) {
      if (ctx.data.tokenPrice(token.address) === undefined) {
        stillToBuy.push(token);
        continue;
      }
      const result = await ctx.broker.buy({ instrument: { kind: 'token', ...token }, notionalUsd: ctx.params.notionalUsd });
      if (result.status === 'filled') plan.bought[token.address] = result.fill.quantity;
      else ctx.log.info({ token: token.symbol, reason: result.reason }, 'buy rejected');
    }
    ctx.state.set(key, { ...plan, toBuy: stillToBuy });
  }
}

async function sellAll(ctx: Ctx, rebalanceId: string): Promise<void> {
  const plan = ctx.state.get<Plan>(`plan:${rebalanceId}`);
  for (const [address, quantity] of Object.entries(plan?.bought ?? {})) {
    const result = await ctx.broker.sell({ instrument: { kind: 'token', address }, quantity });
    if (result.status === 'rejected') ctx.log.warn({ address, reason: result.reason }, 'sell rejected');
  }
  ctx.state.delete(`plan:${rebalanceId}`);
}

export default defineStrategy({
  name: 'follow-rebalance',
  description: 'Buys what an announced rebalance adds or increases; sells it when the rebalance completes.',
  params,
  on: {
    'rebalance.announced': async (event, ctx) => {
      const increases = event.payload.changes
        .filter((c) => c.newWeight > c.oldWeight)
        .sort((a, b) => b.newWeight - b.oldWeight - (a.newWeight - a.oldWeight))
        .slice(0, ctx.params.maxTokens);
      const plan: Plan = { effectiveAt: event.payload.effectiveAt, toBuy: increases.map((c) => ({ address: c.address, symbol: c.symbol })), bought: {} };
      ctx.state.set(`plan:${event.payload.rebalanceId}`, plan);
      await buyPending(ctx);
    },
    'performance.updated': async (_event, ctx) => buyPending(ctx),
    'rebalance.completed': async (event, ctx) => sellAll(ctx, event.payload.rebalanceId),
    'rebalance.cancelled': async (event, ctx) => sellAll(ctx, event.payload.rebalanceId),
  },
});
