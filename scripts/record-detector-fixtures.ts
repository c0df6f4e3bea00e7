/**
 * Records the detector fixtures in test/fixtures/detector from a sandbox with a frozen
 * clock: compositions and rebalancing feeds before and after a rebalance, and a
 * cancellation. Run: npx tsx scripts/record-detector-fixtures.ts
 */
import { writeFileSync } from 'node:fs';
import { startSandbox } from '../src/sandbox/index.ts';

const dir = new URL('../test/fixtures/detector/', import.meta.url).pathname;
const sb = await startSandbox({ port: 0, seed: 11, speed: 0, startTime: Date.UTC(2026, 5, 10, 9, 30), control: true });
const get = async (path: string) => ((await (await fetch(`${sb.baseUrl}${path}`, { headers: { Authorization: `Bearer ${sb.keys.enterprise}` } })).json()) as { data: unknown }).data;
const ctl = async (path: string, body: unknown) =>
  ((await (await fetch(`${sb.origin}/_sandbox${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })).json()) as { data: { id: string } }).data;
const save = (name: string, data: unknown) => writeFileSync(`${dir}${name}.json`, `${JSON.stringify(data, null, 2)}\n`);

save('composition-before', await get('/indexes/dindex/composition'));
save('rebalancing-before', await get('/indexes/dindex/rebalancing?limit=5'));
const rb = await ctl('/rebalance', { index_id: 'dindex', effective_in_seconds: 3600 });
save('rebalancing-announced', await get('/indexes/dindex/rebalancing?limit=5'));
await ctl('/clock', { advance_seconds: 3600 });
save('composition-after', await get('/indexes/dindex/composition'));
save('rebalancing-completed', await get('/indexes/dindex/rebalancing?limit=5'));
const cancelled = await ctl('/rebalance', { index_id: 'dindex', effective_in_seconds: 600 });
await ctl('/rebalance/cancel', { index_id: 'dindex', rebalance_id: cancelled.id });
save('rebalancing-cancelled', await get('/indexes/dindex/rebalancing?limit=5'));
await ctl('/clock', { advance_seconds: 6 * 3600 });
save('composition-drifted', await get('/indexes/dindex/composition'));
save('performance-1', await get('/indexes/dindex/performance'));
await ctl('/clock', { advance_seconds: 3600 });
save('performance-2', await get('/indexes/dindex/performance'));
await sb.close();
console.log(`recorded fixtures for rebalance ${rb.id} and cancelled ${cancelled.id}`);
