import { existsSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { StoreError, WHY_NOT_WRITABLE, makeDirectories } from '../core/index.ts';
import { refuseNonFile } from './database-path.ts';

/** How long a loser waits for the winner to write its pid, to name it. */
const HOLDER_PID_WAIT_MS = 1_000;

/**
 * One daemon per database file. The lock is an exclusive SQLite lock (a kernel file lock) on
 * a side file, `<db>.lock`, taken with no busy wait: of any number of processes starting at
 * once exactly one gets it, and the kernel drops it when its process dies, so a `kill -9`
 * never needs a human and no pid is ever judged stale. The holder's pid is written beside
 * it (`<db>.lock.pid`) only so that a loser can name it; the lock file itself stays.
 */
export class RunLock {
  private constructor(
    private readonly db: Database.Database,
    private readonly pidPath: string,
  ) {}

  /** `remedy`: what a command refused because another process holds the database should do instead. */
  static acquire(dbPath: string, remedy = 'stop it first or use another --db'): RunLock {
    refuseNonFile(dbPath);
    // Taken before the store opens (and creates the directory), so it makes the directory too.
    try {
      makeDirectories(dirname(dbPath));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? '';
      throw new StoreError(`cannot create the directory of ${dbPath}: ${WHY_NOT_WRITABLE[code] ?? (e as Error).message} (${code})`, 'STORE_UNAVAILABLE');
    }
    const path = `${lockBase(dbPath)}.lock`;
    const pidPath = `${path}.pid`;
    let db: Database.Database;
    try {
      db = new Database(path, { timeout: 0 });
    } catch (e) {
      throw new StoreError(`cannot open lock file ${path}: ${(e as Error).message}`, 'STORE_UNAVAILABLE');
    }
    try {
      db.pragma('locking_mode = EXCLUSIVE');
      // The first write in exclusive mode takes the lock, and keeps it until the connection closes.
      db.exec(`BEGIN EXCLUSIVE; PRAGMA user_version = ${process.pid}; COMMIT`);
    } catch (e) {
      db.close();
      const code = (e as { code?: string }).code ?? '';
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
        const holder = holderPid(pidPath);
        throw new StoreError(`another indexbot (${holder === undefined ? 'pid not yet written' : `pid ${holder}`}) is already running on ${dbPath}; ${remedy}`, 'STORE_LOCKED');
      }
      if (code === 'SQLITE_NOTADB') {
        throw new StoreError(`${path} is not indexbot's lock (an older indexbot's?); if no indexbot runs on ${dbPath}, delete it`, 'STORE_LOCKED');
      }
      throw new StoreError(`cannot take the lock ${path}: ${(e as Error).message}`, 'STORE_UNAVAILABLE');
    }
    // Written by rename: a loser reads a whole pid or none, never an empty file.
    const tmp = `${pidPath}.${process.pid}`;
    try {
      writeFileSync(tmp, String(process.pid), { mode: 0o600 });
      renameSync(tmp, pidPath);
    } catch (e) {
      // A directory made read-only under a running bot (trial 32: exit 70, "a bug", which systemd restarted every 5 s).
      db.close();
      const code = (e as NodeJS.ErrnoException).code ?? '';
      throw new StoreError(`cannot write ${pidPath}: ${WHY_NOT_WRITABLE[code] ?? (e as Error).message} (${code}); the directory of ${dbPath} must be writable`, 'STORE_UNAVAILABLE');
    }
    return new RunLock(db, pidPath);
  }

  /**
   * The pid of the indexbot running on `dbPath` now, read from the pid file its lock's holder
   * writes: undefined when none runs (no file, or its process gone: a kill -9 leaves the file).
   * A look only: the lock is not touched, so a daemon starting at that moment is never refused.
   */
  static holder(dbPath: string): number | undefined {
    return runningPid(`${lockBase(dbPath)}.lock.pid`);
  }

  /**
   * Gives the lock up. The pid file goes first, while the lock is still ours: it can only be our
   * own. One that cannot be removed (the directory made read-only) is left: it names a process
   * that is gone, which a reader checks, and the stop stays clean.
   */
  release(): void {
    if (!this.db.open) return;
    try {
      rmSync(this.pidPath, { force: true });
    } catch {
      // Left, naming a process about to be gone.
    }
    this.db.close();
  }
}

/**
 * The path the lock sits beside: the database's own file, symlinks resolved, so two names for
 * one file share one lock (trial 32: a second daemon on a symlink to a running bot's file ran
 * beside it). A file not made yet resolves by its directory.
 */
function lockBase(dbPath: string): string {
  try {
    return existsSync(dbPath) ? realpathSync(dbPath) : join(realpathSync(dirname(dbPath)), basename(dbPath));
  } catch {
    return dbPath;
  }
}

/** The pid the holder wrote; it writes it just after taking the lock, so a loser may wait a moment. */
function holderPid(pidPath: string): number | undefined {
  const end = Date.now() + HOLDER_PID_WAIT_MS;
  for (;;) {
    const pid = runningPid(pidPath);
    if (pid !== undefined) return pid;
    if (Date.now() > end) return undefined;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
  }
}

function runningPid(pidPath: string): number | undefined {
  try {
    const pid = Number(readFileSync(pidPath, 'utf8'));
    return Number.isInteger(pid) && pid > 0 && isRunning(pid) ? pid : undefined;
  } catch {
    // None written (yet), or gone with its holder.
    return undefined;
  }
}

/** Whether process `pid` runs on this host. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it runs, as another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
