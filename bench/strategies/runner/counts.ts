/** Counts the events it is handed: the least a strategy does that commits something per event. */
import { defineStrategy } from 'indexbot';
import { z } from 'zod';

export default defineStrategy({
  name: 'counts',
  params: z.object({}),
  on: {
    'rebalance.announced': (_event, ctx) => {
      ctx.state.set('count', (ctx.state.get<number>('count') ?? 0) + 1);
    },
  },
});
