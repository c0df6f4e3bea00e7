import Database from 'better-sqlite3';
import { StoreWriteError, errorFields } from '../core/index.ts';

/**
 * SQLite's errors that pass with time (a full disk, a lock held too long, an I/O hiccup) as
 * a typed `StoreWriteError`; anything else is returned as it is. Callers that retry use it
 * to say plainly in the log what went wrong.
 */
export function storeFailure(e: unknown): unknown {
  if (!(e instanceof Database.SqliteError)) return e;
  const code = e.code;
  if (code === 'SQLITE_FULL') {
    return new StoreWriteError(`the database cannot grow: the disk is full (or the file reached its size limit); nothing of this write was kept (${code})`, 'STORE_FULL', code);
  }
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return new StoreWriteError(`the database stayed locked by another connection past the busy timeout; nothing of this write was kept (${code})`, 'STORE_BUSY', code);
  }
  if (code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_READONLY') || code === 'SQLITE_CANTOPEN') {
    return new StoreWriteError(`the database file could not be written (${code}: ${e.message}); nothing of this write was kept`, 'STORE_IO', code);
  }
  return e;
}

/** What a log line says about a failure that may be the store's: typed when it is. */
export function failureFields(e: unknown): Record<string, unknown> {
  return errorFields(storeFailure(e));
}
