import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type ErrorKind, IndexbotError, type Logger, silentLogger } from '../core/index.ts';
import { SnapshotStore } from '../store/index.ts';
import { loadStrategyModule, withParams } from '../strategy/index.ts';
import { type BacktestOptions, type BacktestResult, runBacktest } from './replay.ts';

/** What a worker needs for one run: plain data, as it crosses a thread boundary. */
export type SweepSettings = Omit<BacktestOptions, 'cache' | 'strategy' | 'logger' | 'onProgress'>;

export interface SweepJob {
  /** The strategy file, loaded afresh in each worker. */
  file: string;
  /** Params before the strategy's schema (defaults are filled in there). */
  params: Record<string, unknown>;
}

export interface SweepOptions {
  /** The cache file; each worker opens it read-only. */
  db: string;
  settings: SweepSettings;
  jobs: readonly SweepJob[];
  /** Worker threads; 1 runs every job in this thread. @default the number of cores */
  workers?: number;
  logger?: Logger;
  /** Each finished run, in the order they finish. */
  onRun?: (done: number, total: number) => void;
}

export const MAX_WORKERS = 64;

/** One run of a sweep, in whichever thread: the same function, so serial and parallel give the same bytes. */
export async function runJob(db: string, settings: SweepSettings, job: SweepJob, logger: Logger = silentLogger): Promise<BacktestResult> {
  const cache = SnapshotStore.open(db, { readonly: true });
  try {
    const strategy = withParams(await loadStrategyModule(job.file), job.file, job.params);
    return await runBacktest({ ...settings, cache, strategy, logger });
  } finally {
    cache.close();
  }
}

/**
 * Runs a sweep's backtests, on worker threads when there is more than one worker and one
 * job. Results come back in the jobs' order whatever order the runs finish in.
 */
export async function runSweep(o: SweepOptions): Promise<BacktestResult[]> {
  const workers = Math.min(o.workers ?? availableParallelism(), o.jobs.length);
  if (!Number.isInteger(workers) || workers < 1 || workers > MAX_WORKERS) throw new TypeError(`Expected \`workers\` to be an integer from 1 to ${MAX_WORKERS}, got \`${String(o.workers)}\``);
  const results: BacktestResult[] = new Array(o.jobs.length);
  let done = 0;
  if (workers === 1) {
    for (const [i, job] of o.jobs.entries()) {
      results[i] = await runJob(o.db, o.settings, job, o.logger);
      o.onRun?.(++done, o.jobs.length);
    }
    return results;
  }
  let next = 0;
  const threads = Array.from({ length: workers }, () => startWorker());
  try {
    await Promise.all(
      threads.map(async (w) => {
        for (let i = next++; i < o.jobs.length; i = next++) {
          results[i] = await w.run({ db: o.db, settings: o.settings, job: o.jobs[i]! });
          o.onRun?.(++done, o.jobs.length);
        }
      }),
    );
  } finally {
    await Promise.all(threads.map((w) => w.close()));
  }
  return results;
}

/** A message back from the worker: a result, or the error it threw (rebuilt here with its code). */
export type WorkerReply = { ok: true; result: BacktestResult } | { ok: false; name: string; message: string; code?: string; kind?: ErrorKind; stack?: string };

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

function startWorker() {
  const source = workerSource();
  const worker = new Worker(source.code, { eval: source.eval });
  let pending: { resolve: (r: BacktestResult) => void; reject: (e: Error) => void } | undefined;
  const fail = (e: Error) => {
    pending?.reject(e);
    pending = undefined;
  };
  worker.on('message', (reply: WorkerReply) => {
    const p = pending;
    pending = undefined;
    if (reply.ok) p?.resolve(reply.result);
    else p?.reject(rebuild(reply));
  });
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`a sweep worker exited (code ${code}) before its run finished`)));
  return {
    run(message: { db: string; settings: SweepSettings; job: SweepJob }): Promise<BacktestResult> {
      return new Promise((resolve, reject) => {
        pending = { resolve, reject };
        worker.postMessage(message);
      });
    },
    async close(): Promise<void> {
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
