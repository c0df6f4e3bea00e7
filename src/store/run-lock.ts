import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { StoreError } from '../core/index.ts';

/**
 * One daemon per database file. The lock is a file beside the database holding the owner's
 * pid, created exclusively; a lock left by a killed process (its pid no longer runs) is
 * taken over, so a `kill -9` never needs a human to clean up.
 */
export class RunLock {
  private constructor(private readonly path: string) {}

  static acquire(dbPath: string): RunLock {
    const path = `${dbPath}.lock`;
    // Taken before the store opens (and creates the directory), so it makes the directory too.
    try {
      mkdirSync(dirname(path), { recursive: true });
    } catch (e) {
      throw new StoreError(`cannot create the directory of ${dbPath}: ${(e as NodeJS.ErrnoException).code}`, 'STORE_UNAVAILABLE');
    }
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(path, 'wx', 0o600);
        writeSync(fd, String(process.pid));
        closeSync(fd);
        return new RunLock(path);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw new StoreError(`cannot create lock file ${path}: ${(e as NodeJS.ErrnoException).code}`, 'STORE_UNAVAILABLE');
        }
        const owner = Number(readFileSync(path, 'utf8').trim());
        if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isRunning(owner)) {
          throw new StoreError(`another indexbot (pid ${owner}) is already running on ${dbPath}; stop it first or use another --db`, 'STORE_LOCKED');
        }
        rmSync(path, { force: true });
      }
    }
    throw new StoreError(`cannot take the lock ${path}`, 'STORE_LOCKED');
  }

  release(): void {
    rmSync(this.path, { force: true });
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
