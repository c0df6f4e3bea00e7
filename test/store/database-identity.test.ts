import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/core/index.ts';
import { MIGRATIONS, SCHEMA_VERSION, SnapshotStore } from '../../src/store/index.ts';
import { runCli } from '../helpers/daemon.ts';
import { caught } from '../helpers/caught.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/** A SQLite file made by `make`, with its bytes' hash and the files beside it. */
function sqliteFile(make: (db: Database.Database) => void): { path: string; hash: string; beside: string[] } {
  const path = tempDbPath();
  const db = new Database(path);
  make(db);
  db.close();
  return { path, hash: sha(path), beside: readdirSync(dirname(path)).sort() };
}

/** Opening `file` (to write, then read-only) is refused with `code`, and leaves its bytes and its folder as they were. */
function refusedUntouched(file: ReturnType<typeof sqliteFile>, code: string, ...fragments: string[]) {
  for (const readonly of [false, true]) {
    const e = caught<StoreError>(() => SnapshotStore.open(file.path, { readonly }));
    expect(e, `readonly ${readonly}`).toBeInstanceOf(StoreError);
    expect(e.code).toBe(code);
    for (const f of [file.path, ...fragments]) expect(e.message).toContain(f);
    expect(sha(file.path)).toBe(file.hash);
    expect(readdirSync(dirname(file.path)).sort()).toEqual(file.beside);
  }
}

// Trial 36: `run`, `backfill` and `doctor` wrote 24 tables into another program's database and switched it to WAL; one with a user_version was "an old indexbot database to migrate".
describe('a database that is not indexbot’s is refused before anything is written to it', () => {
  it('another program’s tables, with or without a user_version, or another application id', () => {
    refusedUntouched(
      sqliteFile((db) => db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('alice')")),
      'STORE_FOREIGN',
      "another program's SQLite database (tables users)",
    );
    refusedUntouched(
      sqliteFile((db) => {
        db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('x')");
        db.pragma('user_version = 5');
      }),
      'STORE_FOREIGN',
      'tables notes, user_version 5',
    );
    // Another program's tables of the same names do not pass for ours under its own application id.
    refusedUntouched(
      sqliteFile((db) => {
        db.exec(MIGRATIONS[0]!.sql);
        db.pragma('user_version = 1');
        db.pragma('application_id = 1234');
      }),
      'STORE_FOREIGN',
      'application_id 1234',
    );
  });

  it('indexbot’s tables without a schema version (a copy made with sqlite3 .dump) are named so', () => {
    const made = tempDbPath();
    SnapshotStore.open(made).close();
    const dumped = sqliteFile((db) => {
      db.exec(`ATTACH '${made}' AS made`);
      const schema = db.prepare("SELECT sql FROM made.sqlite_master WHERE type = 'table' AND sql IS NOT NULL AND name NOT LIKE 'sqlite!_%' ESCAPE '!'").pluck().all() as string[];
      db.exec('DETACH made');
      for (const sql of schema) db.exec(sql);
    });
    refusedUntouched(dumped, 'STORE_UNAVAILABLE', "holds indexbot's tables but no schema version", '.dump', '.backup or VACUUM INTO');
  });

  it('a database made before the application id is still indexbot’s, and gets the id at its next open to write', () => {
    const old = sqliteFile((db) => {
      db.exec(MIGRATIONS[0]!.sql);
      db.pragma('user_version = 1');
    });
    SnapshotStore.open(old.path, { readonly: false }).close();
    const db = new Database(old.path, { readonly: true });
    expect(db.pragma('application_id', { simple: true })).toBe(0x49584254);
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    db.close();
    const made = tempDbPath();
    SnapshotStore.open(made).close();
    const fresh = new Database(made, { readonly: true });
    expect(fresh.pragma('application_id', { simple: true })).toBe(0x49584254);
    fresh.close();
  });

  it('the commands that write say so in one line, exit 78, and leave the file as it was', { timeout: 60_000 }, async () => {
    const other = sqliteFile((db) => db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('bob')"));
    for (const args of [
      ['backfill', '--db', other.path, '--base-url', 'http://127.0.0.1:9/v1', '--from', '2026-11-01', '--indexes', 'sindex'],
      ['status', '--db', other.path],
    ]) {
      const r = await runCli(args, { INDEXBOT_API_KEY: 'sk_test_unused' });
      expect(r.status, r.stderr).toBe(78);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toContain(`${other.path} is another program's SQLite database (tables users), not an indexbot database`);
      expect(r.stderr).toContain('[STORE_FOREIGN]');
      expect(sha(other.path)).toBe(other.hash);
      expect(existsSync(`${other.path}-wal`)).toBe(false);
    }
  });
});
