import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { z } from 'zod';
import { buildSchemas } from '../../src/contract/index.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { raw, testSandbox } from '../helpers/sandbox.ts';

const strict = buildSchemas({ mode: 'strict' });
const anyEnvelope = z.union([z.strictObject({ success: z.literal(true), data: z.unknown(), meta: strict.meta }), strict.errorEnvelope]);

const ROUTES = [
  '/indexes',
  '/indexes/sindex',
  '/indexes/mindex/composition',
  '/indexes/dindex/performance',
  '/indexes/nindex/history',
  '/indexes/aindex/rebalancing',
  '/indexes/nope/history',
  '/tokens',
  '/user/portfolio',
  '/auth/refresh',
  '/unknown',
];
const PARAMS = ['page', 'limit', 'offset', 'from', 'to', 'interval', 'status', 'x'];

let sb: Sandbox;
beforeAll(async () => {
  sb = await testSandbox({ rateLimits: false });
});
afterAll(() => sb.close());

describe('any query string on any route', () => {
  it('gives a valid envelope and never a 500', async () => {
    const value = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.integer({ min: -5, max: 200 }).map(String),
      fc.double({ noNaN: false }).map(String),
      fc.constantFrom('1h', '1d', 'announced', 'cancelled', '2026-01-01', '2026-11-20T10:00:00.000Z', '', '%', '%zz'),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), fc.array(fc.tuple(fc.constantFrom(...PARAMS), value), { maxLength: 5 }), async (route, params) => {
        const query = params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
        const res = await raw(`${sb.baseUrl}${route}${query ? `?${query}` : ''}`);
        if (res.status >= 500) throw new Error(`${res.status} for ${route}?${query}: ${res.text}`);
        const parsed = anyEnvelope.safeParse(res.json);
        if (!parsed.success) throw new Error(`not an envelope for ${route}?${query}: ${res.text.slice(0, 200)}`);
      }),
      { numRuns: 300, seed: 20261122 },
    );
  });
});
