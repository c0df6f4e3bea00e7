import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { RunLock } from '../../src/store/index.ts';

export interface DaemonProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `indexbot run` as its own process (node directly, so signals reach it). */
export function spawnDaemon(args: string[], env: Record<string, string>): DaemonProcess {
  const child = spawn(process.execPath, ['bin/indexbot.js', 'run', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  // 'close', not 'exit': a process's last output may still be in the pipe when it has exited.
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/**
 * Runs one CLI command as its own process, without blocking this one (which may serve the
 * sandbox the command talks to); logs are JSON lines (stderr is a pipe), its last line plain text.
 */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['bin/indexbot.js', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** A daemon config against a test sandbox (premium tier, its short rate window), plus `extra`. */
export function sandboxConfig(sandbox: { baseUrl: string }, dbPath: string, extra: Record<string, unknown>): string {
  return writeConfig(dbPath, { baseUrl: sandbox.baseUrl, db: dbPath, tier: 'premium', rateWindowMs: 10_000, ...extra });
}

export function writeConfig(dbPath: string, config: Record<string, unknown>): string {
  const path = join(dirname(dbPath), 'indexbot.json');
  writeFileSync(path, JSON.stringify(config, null, 2));
  return path;
}

/** Reads the daemon's database from outside, as `status` does (WAL allows a reader beside the writer). */
export function readDb<T>(dbPath: string, fn: (db: Database.Database) => T): T {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** Polls `probe` (sync or async) until it gives a truthy value. An async probe is awaited: a pending promise is no answer. */
export async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000, everyMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch {
      // not there yet (the file may not exist before the daemon's first write)
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface EventRow {
  seq: number;
  id: string;
  type: string;
  index_id: string;
  detected_at: number;
  occurred_at: number;
  payload: string;
}

/** No holder's pid is left beside the database, and the run lock can be taken (and is given back). */
export function lockIsFree(dbPath: string): boolean {
  if (existsSync(`${dbPath}.lock.pid`)) return false;
  try {
    RunLock.acquire(dbPath).release();
    return true;
  } catch {
    return false;
  }
}
