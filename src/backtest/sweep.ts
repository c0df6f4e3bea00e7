import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type ErrorKind, IndexbotError, type Logger, silentLogger } from '../core/index.ts';
import { SnapshotStore } from '../store/index.ts';
import { type Strategy, loadStrategyModule, withParams } from '../strategy/index.ts';
import { type BacktestOptions, type BacktestResult, runBacktest } from './replay.ts';

/** What a worker needs for one run: plain data, as it crosses a thread boundary. */
export type SweepSettings = Omit<BacktestOptions, 'cache' | 'strategy' | 'logger' | 'onProgress'>;

export interface SweepJob {
  /** The strategy file, loaded once by each thread of the sweep. */
  file: string;
  /** Params before the strategy's schema (defaults are filled in there). */
  params: Record<string, unknown>;
}

export interface SweepOptions {
  /** The cache file; each worker opens it read-only. */
  db: string;
  settings: SweepSettings;
  jobs: readonly SweepJob[];
  /** Threads running backtests, this one included (so `workers - 1` worker threads); 1 runs every job in this thread. @default the number of cores */
  workers?: number;
  logger?: Logger;
  /** Each finished run, in the order they finish. */
  onRun?: (done: number, total: number) => void;
}

export const MAX_WORKERS = 64;

/**
 * A sweep's strategy files, each loaded once per thread (as a freqtrade hyperopt process loads
 * its strategy once): a file and everything it imports evaluated for every run cost more than
 * a short run itself. A run's state lives in `ctx.state`, never in module variables.
 */
export function loadEachFileOnce(): (file: string) => Promise<Strategy> {
  const loaded = new Map<string, Promise<Strategy>>();
  return (file) => {
    let strategy = loaded.get(file);
    if (!strategy) loaded.set(file, (strategy = loadStrategyModule(file)));
    return strategy;
  };
}

/** One run of a sweep, in whichever thread: the same function, so serial and parallel give the same bytes. */
export async function runJob(db: string, settings: SweepSettings, job: SweepJob, load: (file: string) => Promise<Strategy>, logger: Logger = silentLogger): Promise<BacktestResult> {
  const cache = SnapshotStore.open(db, { readonly: true });
  try {
    const strategy = withParams(await load(job.file), job.file, job.params);
    return await runBacktest({ ...settings, cache, strategy, logger });
  } finally {
    cache.close();
  }
}

/**
 * Runs a sweep's backtests on `workers` threads: this one, which has the code loaded and
 * warm, and `workers - 1` worker threads. Each thread takes the next job from a counter they
 * share as soon as it is free, so no thread idles while jobs remain and none waits on this
 * thread to hand it work. Results come back in the jobs' order whatever order the runs finish
 * in. On a failure no job starts any more; the first error (in the jobs' order among those
 * that ran) is thrown once the runs in flight are done or stopped.
 */
export async function runSweep(o: SweepOptions): Promise<BacktestResult[]> {
  const threads = Math.min(o.workers ?? availableParallelism(), o.jobs.length);
  if (!Number.isInteger(threads) || threads < 1 || threads > MAX_WORKERS) throw new TypeError(`Expected \`workers\` to be an integer from 1 to ${MAX_WORKERS}, got \`${String(o.workers)}\``);
  const total = o.jobs.length;
  const results: BacktestResult[] = new Array(total);
  const errors: { index: number; error: Error }[] = [];
  const next = new Int32Array(new SharedArrayBuffer(4));
  let done = 0;
  const finished = (index: number, result: BacktestResult) => {
    results[index] = result;
    o.onRun?.(++done, total);
  };
  const failed = (index: number, error: Error) => {
    errors.push({ index, error });
    // No thread takes another job.
    Atomics.store(next, 0, total);
  };
  const work: SweepWork = { db: o.db, settings: o.settings, jobs: o.jobs, next: next.buffer as SharedArrayBuffer };
  const workers = Array.from({ length: threads - 1 }, () => startWorker(work, finished, failed));
  const load = loadEachFileOnce();
  try {
    for (let i = Atomics.add(next, 0, 1); i < total; i = Atomics.add(next, 0, 1)) {
      try {
        finished(i, await runJob(o.db, o.settings, o.jobs[i]!, load, o.logger));
      } catch (e) {
        failed(i, e instanceof Error ? e : new Error(String(e)));
      }
    }
    // After a failure here, the workers' runs are stopped, not waited for.
    if (errors.length === 0) await Promise.race([Promise.all(workers.map((w) => w.done)), ...workers.map((w) => w.failedOnce)]);
  } finally {
    await Promise.all(workers.map((w) => w.close()));
  }
  if (errors.length > 0) throw errors.sort((a, b) => a.index - b.index)[0]!.error;
  return results;
}

/** What each worker is given once: every job, and the counter the threads take them from. */
export interface SweepWork {
  db: string;
  settings: SweepSettings;
  jobs: readonly SweepJob[];
  next: SharedArrayBuffer;
}

/** A message back from a worker: a job's result or the error it threw (rebuilt here with its code), or that it found no job left. */
export type WorkerReply =
  | { index: number; ok: true; result: BacktestResult }
  | { index: number; ok: false; name: string; message: string; code?: string; kind?: ErrorKind; stack?: string }
  | { index: null };

/**
 * The worker's file beside this one: `.js` in the built package; `.ts` when running from
 * source, and then the worker registers tsx (as bin/indexbot.js does) before importing it.
 */
function workerSource(): { code: string | URL; eval: boolean } {
  const js = new URL('./sweep-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(js))) return { code: js, eval: false };
  const ts = new URL('./sweep-worker.ts', import.meta.url).href;
  // tsx's ESM entry (its CommonJS one cannot be required from an eval'd worker).
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api')).href.replace(/\.cjs$/, '.mjs');
  // And, as bin/indexbot.js does, resolve `indexbot` imports (a strategy's) to src/: hooks do not reach a worker.
  const sourceCondition = 'data:text/javascript,export const resolve = (s, c, next) => next(s, { ...c, conditions: [...c.conditions, "indexbot-source"] });';
  return {
    code: `Promise.all([import(${JSON.stringify(tsx)}), import('node:module')]).then(([m, mod]) => { m.register(); mod.register(${JSON.stringify(sourceCondition)}); return import(${JSON.stringify(ts)}); });`,
    eval: true,
  };
}

function startWorker(work: SweepWork, finished: (index: number, result: BacktestResult) => void, failed: (index: number, error: Error) => void) {
  const source = workerSource();
  const worker = new Worker(source.code, { eval: source.eval });
  let running = true;
  let resolveDone!: () => void;
  let resolveFailed!: () => void;
  const done = new Promise<void>((resolve) => {
    resolveDone = resolve;
  });
  // Settles only when the worker failed: the sweep then stops waiting for the others.
  const failedOnce = new Promise<void>((resolve) => {
    resolveFailed = resolve;
  });
  const lost = (e: Error) => {
    if (!running) return;
    running = false;
    failed(Number.MAX_SAFE_INTEGER, e);
    resolveFailed();
  };
  worker.on('message', (reply: WorkerReply) => {
    if (reply.index === null) {
      running = false;
      resolveDone();
    } else if (reply.ok) finished(reply.index, reply.result);
    else {
      running = false;
      failed(reply.index, rebuild(reply));
      resolveFailed();
    }
  });
  worker.on('error', lost);
  worker.on('exit', (code) => lost(new Error(`a sweep worker exited (code ${code}) before its runs finished`)));
  worker.postMessage(work);
  return {
    done,
    failedOnce,
    async close(): Promise<void> {
      running = false;
      await worker.terminate();
    },
  };
}

/** An error thrown in a worker reaches the CLI as the same kind of error: same name, code and kind (so the same exit code). */
function rebuild(reply: Extract<WorkerReply, { ok: false }>): Error {
  const e = reply.code !== undefined && reply.kind !== undefined ? new IndexbotError(reply.message, reply.code, reply.kind) : new Error(reply.message);
  e.name = reply.name;
  if (reply.stack) e.stack = reply.stack;
  return e;
}
