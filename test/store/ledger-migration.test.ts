import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { decimal, toNumber } from '../../src/core/index.ts';
import { MIGRATIONS, SCHEMA_VERSION, SnapshotStore } from '../../src/store/index.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

// Found by what it does, not by its number: the migration that makes the paper ledger exact.
const ledgerMigration = MIGRATIONS.find((m) => m.sql.includes('paper_accounts_real'))!;

/** A database as the REAL-column schema left it, with amounts the float ledger wrote. */
function oldDatabase(): string {
  const path = tempDbPath();
  const db = new Database(path);
  db.pragma('foreign_keys = ON');
  for (const m of MIGRATIONS.filter((x) => x.version < ledgerMigration.version)) db.exec(m.sql);
  db.pragma(`user_version = ${ledgerMigration.version - 1}`);
  db.prepare('INSERT INTO paper_accounts (account, initial_cash, cash) VALUES (?, ?, ?)').run('strategy:a', 10_000, 1_000 - 201 - 0.201);
  const position = db.prepare('INSERT INTO paper_positions (account, instrument, quantity, cost_usd) VALUES (?, ?, ?, ?)');
  position.run('strategy:a', 'token:SOL', 2, 201.201);
  position.run('strategy:a', 'token:CHEAP', 123_456_789_012.5, 0.1 + 0.2);
  position.run('strategy:a', 'token:DUST', 1e-13, 0.000001);
  const fill = db.prepare("INSERT INTO paper_fills (account, event_id, instrument, side, quantity, price, fee_usd, at) VALUES ('strategy:a', NULL, ?, 'buy', ?, ?, ?, ?)");
  fill.run('token:SOL', 2, 100.5, 0.201, 1);
  fill.run('token:CHEAP', 1e-7, 1.0005e-9, 0, 2);
  db.close();
  return path;
}

describe('exact ledger migration', () => {
  it('reads the amounts of a REAL-column database back exactly, at the ledger scale', () => {
    const path = oldDatabase();
    const store = SnapshotStore.open(path);
    try {
      expect(store.schemaVersion).toBe(SCHEMA_VERSION);
      const account = store.strategies.account('strategy:a')!;
      expect(account.initialCash.toString()).toBe('10000');
      // 798.7990000000001 in the double: the float noise is below the micro-USD and goes.
      expect(account.cash.toString()).toBe('798.799');
      expect(store.strategies.positions('strategy:a').map((p) => [p.instrument, p.quantity.toString(), p.costUsd.toString()])).toEqual([
        ['token:CHEAP', '123456789012.5', '0.3'],
        ['token:SOL', '2', '201.201'],
        // token:DUST held 1e-13 units, below the 1e-12 the ledger keeps: closed.
      ]);
      const fills = store.strategies.fills('strategy:a');
      expect(fills.map((f) => [f.quantity.toString(), f.price.toString(), f.feeUsd.toString()])).toEqual([
        ['2', '100.5', '0.201'],
        ['0.0000001', '0.0000000010005', '0'],
      ]);
      // Amounts within the ledger's scale read back as the same numbers.
      expect(fills.map((f) => [toNumber(f.quantity), toNumber(f.price), toNumber(f.feeUsd)])).toEqual([
        [2, 100.5, 0.201],
        [1e-7, 1.0005e-9, 0],
      ]);

      // Stored as text now, so exact amounts stay exact.
      store.strategies.setCash('strategy:a', decimal('798.799').plus(decimal('0.000001')));
      expect(store.strategies.account('strategy:a')!.cash.toString()).toBe('798.799001');
    } finally {
      store.close();
    }
    const db = new Database(path, { readonly: true });
    try {
      expect(db.prepare("SELECT typeof(cash) AS t FROM paper_accounts WHERE account = 'strategy:a'").get()).toEqual({ t: 'text' });
      expect(db.pragma('foreign_key_check')).toEqual([]);
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      db.close();
    }
  });
});
