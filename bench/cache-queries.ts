/**
 * The live cache's reads that run on every paper order or strategy query, on a cache as a
 * month-long run leaves it: 8 indexes of 12 constituents, one composition a minute, for
 * `DAYS` days. Also times a retention pass over it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Composition } from '../src/contract/index.ts';
import { RetentionJob, SnapshotStore } from '../src/store/index.ts';

const INDEXES = 8;
const DAYS = 10;
const PER_DAY = 1_440;
const T0 = Date.UTC(2026, 9, 1);

function timeEach(label: string, n: number, fn: () => unknown): void {
  const t = performance.now();
  for (let i = 0; i < n; i++) fn();
  console.log(`  ${label.padEnd(52)} ${((performance.now() - t) / n).toFixed(3).padStart(8)} ms`);
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'indexbot-cache-'));
  const store = SnapshotStore.open(join(dir, 'cache.db'));
  const tokens = Array.from({ length: 40 }, (_, i) => ({ address: `Tok${i}`.padEnd(44, 'x'), symbol: `T${i}` }));
  const end = T0 + DAYS * 86_400_000;
  for (let x = 0; x < INDEXES; x++) store.upsertIndex({ id: `idx${x}`, name: `Index ${x}`, status: 'active' } as never, T0);
  // A token idx0 held once, a minute before the first of the other snapshots, and no index since: in the
  // cache, so its price lookup searches the rows rather than stopping at an unknown address.
  const dropped = tokens[39]!;
  const before = T0 - 60_000;
  store.insertComposition(store.insertSnapshot({ endpoint: 'composition', indexId: 'idx0', fetchedAt: before, asOf: before, hash: 'dropped', raw: '{}', status: 'accepted' }), {
    index_id: 'idx0',
    as_of: new Date(before).toISOString(),
    rebalance_id: null,
    constituents: [{ ...dropped, weight: 1, target_weight: 1, price_usd: 1 }],
  } as Composition);
  let t = performance.now();
  // In time order, as the poller stores them (an hour per transaction, to build it quickly).
  for (let hour = 0; hour < (DAYS * PER_DAY) / 60; hour++) {
    store.transaction(() => {
      for (let m = hour * 60; m < (hour + 1) * 60; m++) {
        const at = T0 + m * 60_000;
        for (let x = 0; x < INDEXES; x++) {
          const c = {
            index_id: `idx${x}`,
            as_of: new Date(at).toISOString(),
            rebalance_id: null,
            constituents: tokens.slice(x * 3, x * 3 + 12).map((k) => ({ ...k, weight: 1 / 12, target_weight: 1 / 12, price_usd: 1 + m / 1e4 })),
          } as Composition;
          store.insertComposition(store.insertSnapshot({ endpoint: 'composition', indexId: c.index_id, fetchedAt: at, asOf: at, hash: `${x}:${m}`, raw: '{}', status: 'accepted' }), c);
        }
      }
    });
  }
  const snapshots = DAYS * PER_DAY * INDEXES;
  console.log(
    `cache queries: ${INDEXES} indexes x ${DAYS} days of one composition a minute (${snapshots} snapshots, ${snapshots * 12} rows), built in ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
  const token = tokens[10]!.address;
  timeEach('tokenPriceAt now', 200, () => store.tokenPriceAt(token, end));
  timeEach('tokenPriceAt one day back', 200, () => store.tokenPriceAt(token, end - 86_400_000));
  timeEach('tokenPriceAt of a token no index held since the start', 5, () => {
    if (store.tokenPriceAt(dropped.address, end)?.asOf !== before) throw new Error("expected the dropped token's only price");
  });
  timeEach('tokenPriceAt of an address never cached', 5, () => store.tokenPriceAt('Never'.padEnd(44, 'x'), end));
  timeEach('compositionAt now', 200, () => store.compositionAt('idx3', end));
  timeEach('compositionAt halfway', 200, () => store.compositionAt('idx3', T0 + (end - T0) / 2));
  t = performance.now();
  const pruned = await new RetentionJob({ store, days: DAYS / 2, clock: { now: () => end, setTimeout: () => 0, clearTimeout: () => {} } }).runOnce();
  console.log(`  ${'retention pass (half the cache)'.padEnd(52)} ${((performance.now() - t) / 1000).toFixed(2).padStart(8)} s   (${pruned.snapshots} snapshots)`);
  store.close();
  rmSync(dir, { recursive: true, force: true });
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
