/** Throws on every event: each is tried three times, with the runtime's backoff between tries, then parked. */
import { defineStrategy } from 'indexbot';
import { z } from 'zod';

export default defineStrategy({
  name: 'broken',
  params: z.object({}),
  on: {
    'rebalance.announced': () => {
      throw new Error('broken on purpose');
    },
  },
});
