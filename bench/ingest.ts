/**
 * Composition snapshots stored per second through the full path (validate, hash and
 * dedupe, diff, detect, one transaction per snapshot with raw JSON, rows and events), for
 * 30 and 100 constituents; the same rows through a bare better-sqlite3 insert for
 * comparison; and the database size per 10,000 snapshots.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Snapshot } from '../src/api/index.ts';
import { buildSchemas } from '../src/contract/index.ts';
import { ingest } from '../src/poller/index.ts';
import { SnapshotStore } from '../src/store/index.ts';

const SNAPSHOTS = Number(process.env.BENCH_SNAPSHOTS ?? 10_000);
const schemas = buildSchemas({ mode: 'lenient' });

function compositions(constituents: number): unknown[] {
  const addresses = Array.from({ length: constituents }, (_, i) => `Mint${i}x`.padEnd(44, '1'));
  const start = Date.UTC(2026, 0, 1);
  return Array.from({ length: SNAPSHOTS }, (_, s) => {
    const rebalance = Math.floor(s / 500);
    const raw = addresses.map((_, i) => 1 + ((i * 7919 + s * 31) % 97) / 1000 + (i === rebalance % constituents ? 0.5 : 0));
    const sum = raw.reduce((a, b) => a + b, 0);
    return {
      index_id: 'bench',
      as_of: new Date(start + s * 60_000).toISOString(),
      rebalance_id: `rb_${rebalance}`,
      constituents: addresses.map((address, i) => ({
        address,
        symbol: `T${i}`,
        name: `Token ${i}`,
        weight: raw[i]! / sum,
        target_weight: 1 / constituents,
        price_usd: 1 + i,
        units: raw[i]! / sum / (1 + i),
        value_usd: raw[i]! / sum,
      })),
    };
  });
}

function fullPath(data: unknown[]): { perSecond: number; bytes: number; events: number } {
  const dir = mkdtempSync(join(tmpdir(), 'indexbot-bench-'));
  const store = SnapshotStore.open(join(dir, 'bench.db'));
  let events = 0;
  const t0 = performance.now();
  data.forEach((raw, i) => {
    const parsed = schemas.composition.safeParse(raw);
    const snapshot: Snapshot<'composition'> = { kind: 'composition', raw, requestId: undefined, value: parsed.success ? parsed.data : undefined };
    events += ingest(store, snapshot, 'bench', i, 0.02).events.length;
  });
  const seconds = (performance.now() - t0) / 1000;
  store.close();
  const bytes = statSync(join(dir, 'bench.db')).size;
  rmSync(dir, { recursive: true, force: true });
  return { perSecond: data.length / seconds, bytes, events };
}

function bareInsert(data: unknown[]): number {
  const dir = mkdtempSync(join(tmpdir(), 'indexbot-bench-'));
  const db = new Database(join(dir, 'bare.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // The same two tables the store writes, with nothing around them.
  db.exec(`CREATE TABLE snapshots (id INTEGER PRIMARY KEY, raw TEXT NOT NULL);
    CREATE TABLE rows (snapshot_id INTEGER, token_id INTEGER, weight REAL, target_weight REAL, price_usd REAL, units REAL, PRIMARY KEY (snapshot_id, token_id)) WITHOUT ROWID;`);
  const snap = db.prepare('INSERT INTO snapshots (raw) VALUES (?)');
  const row = db.prepare('INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?)');
  type C = { constituents: { weight: number; target_weight: number; price_usd: number; units: number }[] };
  const one = db.transaction((c: C) => {
    const id = snap.run(JSON.stringify(c)).lastInsertRowid;
    for (const [i, k] of c.constituents.entries()) row.run(id, i, k.weight, k.target_weight, k.price_usd, k.units);
  });
  const t0 = performance.now();
  for (const c of data) one(c as C);
  const seconds = (performance.now() - t0) / 1000;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return data.length / seconds;
}

export async function run(): Promise<void> {
  console.log(`ingest: ${SNAPSHOTS} composition snapshots per size, one transaction each`);
  for (const n of [30, 100]) {
    const data = compositions(n);
    const full = fullPath(data);
    const bare = bareInsert(data);
    console.log(
      `  ${String(n).padStart(3)} constituents: ${full.perSecond.toFixed(0).padStart(6)} snapshots/s full path, ${bare.toFixed(0).padStart(6)}/s bare insert, ratio ${(full.perSecond / bare).toFixed(2)}x; ${full.events} events; DB ${(((full.bytes / SNAPSHOTS) * 10_000) / 1024 / 1024).toFixed(1)} MiB per 10,000 snapshots`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
