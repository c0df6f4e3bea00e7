/**
 * rebalance-alert: no trading. A readable alert for every rebalance: announced (with its
 * effective time), completed and cancelled, with what is added, removed and reweighted,
 * old -> new weights.
 *
 * Params:
 * - minChange: leave out reweightings smaller than this, as a fraction (default 0)
 */
import { describeChanges, defineStrategy } from 'indexbot';
import { z } from 'zod';

const when = (t: number) => `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

export default defineStrategy({
  name: 'rebalance-alert',
  description: 'Alerts on every rebalance, listing what it adds, removes and reweights.',
  params: z.object({ minChange: z.number().min(0).max(1).default(0) }),
  on: {
    'rebalance.announced': (event, ctx) => {
      const changes = event.payload.changes.filter((c) => Math.abs(c.newWeight - c.oldWeight) >= ctx.params.minChange);
      ctx.alert(`${event.indexId} rebalance announced, effective ${when(event.payload.effectiveAt)}: ${describeChanges(changes)}`, {
        rebalanceId: event.payload.rebalanceId,
        effectiveAt: event.payload.effectiveAt,
      });
    },
    'rebalance.completed': (event, ctx) => {
      const changes = event.payload.changes.filter((c) => Math.abs(c.newWeight - c.oldWeight) >= ctx.params.minChange);
      ctx.alert(`${event.indexId} rebalance completed at ${when(event.payload.effectiveAt)}: ${describeChanges(changes)}`, {
        rebalanceId: event.payload.rebalanceId,
      });
    },
    'rebalance.cancelled': (event, ctx) => {
      ctx.alert(`${event.indexId} rebalance ${event.payload.rebalanceId} cancelled (was due ${when(event.payload.effectiveAt)})`, {
        rebalanceId: event.payload.rebalanceId,
      });
    },
  },
});
