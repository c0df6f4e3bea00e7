import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { registerMigrationFunctions } from '../../src/store/migrations.ts';
import { MIGRATIONS, SCHEMA_VERSION, SnapshotStore } from '../../src/store/index.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

// Found by what it does, not by its number: the migration that dates rebalancing statuses by the records' own times.
const datesMigration = MIGRATIONS.find((m) => m.sql.includes("WHEN 'completed' THEN COALESCE(r.completed_at, r.effective_at)"))!;

/** A cache as polls left it before the migration: each status dated at the poll that first saw it. */
function oldDatabase(): string {
  const path = tempDbPath();
  const db = new Database(path);
  db.pragma('foreign_keys = ON');
  registerMigrationFunctions(db);
  for (const m of MIGRATIONS.filter((x) => x.version < datesMigration.version)) db.exec(m.sql);
  db.pragma(`user_version = ${datesMigration.version - 1}`);
  const record = db.prepare(
    "INSERT INTO rebalances (id, index_id, status, announced_at, effective_at, completed_at, record, updated_at) VALUES (@id, 'one', @status, @announced, @effective, @completed, json_object('id', @id), @seen)",
  );
  const change = db.prepare('INSERT INTO rebalance_status_changes (rebalance_id, status, observed_at) VALUES (?, ?, ?)');
  // First seen finished, by a daemon's first poll months later: only its end, dated then.
  record.run({ id: 'rb_old', status: 'completed', announced: 1_000, effective: 5_000, completed: 5_000, seen: 1_000_000 });
  change.run('rb_old', 'completed', 1_000_000);
  // Watched as it changed: each status a poll after it became true.
  record.run({ id: 'rb_live', status: 'completed', announced: 2_000, effective: 6_000, completed: 6_000, seen: 6_030 });
  change.run('rb_live', 'announced', 2_030);
  change.run('rb_live', 'completed', 6_030);
  // Watched until announced, found cancelled long after.
  record.run({ id: 'rb_gone', status: 'cancelled', announced: 3_000, effective: 7_000, completed: null, seen: 900_000 });
  change.run('rb_gone', 'announced', 3_010);
  change.run('rb_gone', 'cancelled', 900_000);
  db.close();
  return path;
}

describe('rebalancing status dates migration', () => {
  it("dates the statuses a poll stored by the records' own times, and gives a record first seen finished its announcement", () => {
    const store = SnapshotStore.open(oldDatabase());
    try {
      expect(store.schemaVersion).toBe(SCHEMA_VERSION);
      expect([...store.rebalanceTransitions(['one'], Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)].map((t) => `${t.record.id} ${t.status} ${t.at}`)).toEqual([
        'rb_old announced 1000',
        'rb_live announced 2000',
        'rb_gone announced 3000',
        'rb_old completed 5000',
        'rb_live completed 6000',
        'rb_gone cancelled 7000',
      ]);
    } finally {
      store.close();
    }
  });
});
