import { existsSync, statSync } from 'node:fs';
import { StoreError } from '../core/index.ts';

/**
 * Refuses a database path that exists and is no regular file: SQLite opens /dev/null, then
 * every write fails as a disk error (exit 75, "retry later": a service restarts it for ever),
 * after the lock file was made beside it in /dev (trial 25).
 */
export function refuseNonFile(path: string): void {
  if (path === ':memory:' || !existsSync(path)) return;
  const stat = statSync(path);
  if (stat.isFile()) return;
  const what = stat.isDirectory() ? 'a directory' : stat.isCharacterDevice() || stat.isBlockDevice() ? 'a device' : stat.isFIFO() ? 'a pipe' : stat.isSocket() ? 'a socket' : 'no regular file';
  throw new StoreError(`${path} is ${what}, not a database file; pass --db a file`, 'STORE_UNAVAILABLE');
}
