import { existsSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { UsageError } from '../core/index.ts';
import type { SnapshotStore } from './snapshot-store.ts';

/** The runtime key that says a demo made this database. */
const DEMO_MARK = 'demo';

/**
 * Deletes a database the demo made, so the next demo starts afresh; refuses any other (a
 * backfilled cache, a bot's paper book), whatever its name: `--db` pointed at the wrong file
 * must lose nothing. `evenUnmarked` lets the demo's own default path go although a demo from
 * before the mark made it. Call with the run lock held: a running bot's file is never touched.
 */
export function removeDemoDatabase(path: string, evenUnmarked: boolean): void {
  refuseForeignDatabase(path, evenUnmarked);
  removeDatabaseFiles(path);
}

/**
 * Removes a database file and its -wal and -shm: the demo's, or one a start refused after
 * making it (trial 33: an empty file stayed behind), which no other process could have
 * written while the run lock was held.
 */
export function removeDatabaseFiles(path: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
}

/** Throws unless the demo may replace `path`: a new file, one a demo made, or `evenUnmarked`. */
export function refuseForeignDatabase(path: string, evenUnmarked: boolean): void {
  if (existsSync(path) && !evenUnmarked && !isDemoDatabase(path)) {
    throw new UsageError(`--db ${path}: not a database the demo made, and the demo starts its database afresh (deleting it); name a new file, or leave --db out for data/demo.db`);
  }
}

/** Marks the store as the demo's, so a later demo may replace it. */
export function markDemoDatabase(store: SnapshotStore, at: number): void {
  store.setRuntime(DEMO_MARK, { madeAt: at }, at);
}

/** A database a bot or a backfill has written to is no longer the demo's to replace. */
export function claimFromDemo(store: SnapshotStore): void {
  store.deleteRuntime(DEMO_MARK);
}

function isDemoDatabase(path: string): boolean {
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true });
    try {
      return db.prepare('SELECT 1 FROM runtime WHERE key = ?').get(DEMO_MARK) !== undefined;
    } finally {
      db.close();
    }
  } catch {
    // Not SQLite, or without our tables: not the demo's.
    return false;
  }
}
