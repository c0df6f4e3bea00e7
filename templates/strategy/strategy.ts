/**
 * __NAME__: what it does, in one line.
 */
import { defineStrategy } from 'indexbot';
import { z } from 'zod';

export default defineStrategy({
  name: '__NAME__',
  description: 'What __NAME__ does.',
  params: z.object({
    notionalUsd: z.number().positive().default(100),
  }),
  on: {
    'rebalance.announced': async (event, ctx) => {
      ctx.log.info({ rebalance: event.payload.rebalanceId, changes: event.payload.changes.length }, 'rebalance announced');
    },
  },
});
