/** The worker threads of a sweep session, and what passes between them and the session. */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type ErrorCode, type ErrorKind, IndexbotError, type Logger } from '../core/index.ts';
import type { SharedHistory } from './recorded-history.ts';
import type { SweepJob, SweepOutput, SweepRunOutput, SweepSettings } from './sweep.ts';

/** What a worker is given for each sweep: every job, and the counter the threads take them from. */
export interface SweepWork {
  db: string;
  settings: SweepSettings;
  jobs: readonly SweepJob[];
  output: SweepOutput;
  next: SharedArrayBuffer;
  /** The history the runs replay, numbered within the session: a worker that holds this one already is not sent its data again. */
  history: { id: number; data?: SharedHistory };
}

/** What a worker is sent: a sweep's work, or word to let its history go. */
export type WorkerMessage = SweepWork | { forget: true };

/** A line a worker's run logged, for the sweep's logger here: only a worker thread's own writes to standard error could interleave mid-line. */
export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: object;
  msg: string | undefined;
}

/** A message back from a worker: a line logged, a job's result or the error it threw (rebuilt here with its code), or that it found no job left. */
export type WorkerReply =
  | { log: LogLine }
  | { index: number; ok: true; result: SweepRunOutput }
  | { index: number; ok: false; name: string; message: string; code?: ErrorCode; kind?: ErrorKind; stack?: string }
  | { index: null };

/**
 * The worker's file beside this one: `.js` in the built package; `.ts` when running from
 * source, and then the worker registers tsx (as bin/indexbot.js does) before importing it.
 */
function workerSource(): { code: string | URL; eval: boolean } {
  const js = new URL('./sweep-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(js))) return { code: js, eval: false };
  const ts = new URL('./sweep-worker.ts', import.meta.url).href;
  // As bin/indexbot.js does in a checkout: tsx, and `indexbot` imports (a strategy's) to src/; hooks do not reach a worker.
  const hooks = new URL('../../scripts/register-source-imports.mjs', import.meta.url).href;
  return {
    code: `import(${JSON.stringify(hooks)}).then(() => import(${JSON.stringify(ts)}));`,
    eval: true,
  };
}

/** A sweep's part on one worker: settles when the worker found no job left, or (failedOnce only) when it failed. */
export interface WorkerRun {
  done: Promise<void>;
  failedOnce: Promise<void>;
}

/** A worker thread of a session, kept between sweeps. */
export interface PooledWorker {
  run(work: SweepWork, finished: (index: number, result: SweepRunOutput) => void, failed: (index: number, error: Error) => void): WorkerRun;
  /** Lets the history it holds go (the next sweep sends its own). */
  forget(): void;
  close(): Promise<void>;
  /** False once it exited or failed: it takes no more sweeps. */
  readonly alive: boolean;
}

export function startWorker(logger: Logger): PooledWorker {
  const source = workerSource();
  const worker = new Worker(source.code, { eval: source.eval });
  // Idle between sweeps, it never keeps the process alive; a sweep holds it while its part runs.
  worker.unref();
  let historyId: number | undefined;
  let current: { finished: (index: number, result: SweepRunOutput) => void; failed: (index: number, error: Error) => void; done: () => void; failedOnce: () => void } | undefined;
  let dead: Error | undefined;
  const end = () => {
    current = undefined;
    worker.unref();
  };
  const lost = (e: Error) => {
    dead ??= e;
    if (!current) return;
    const run = current;
    end();
    run.failed(Number.MAX_SAFE_INTEGER, e);
    run.failedOnce();
  };
  worker.on('message', (reply: WorkerReply) => {
    if ('log' in reply) logger[reply.log.level](reply.log.obj, reply.log.msg);
    else if (!current) return;
    else if (reply.index === null) {
      const run = current;
      end();
      run.done();
    } else if (reply.ok) current.finished(reply.index, reply.result);
    else {
      const run = current;
      end();
      run.failed(reply.index, rebuild(reply));
      run.failedOnce();
    }
  });
  worker.on('error', lost);
  worker.on('exit', (code) => lost(new Error(`a sweep worker exited (code ${code}) before its runs finished`)));
  return {
    run(work, finished, failed) {
      let run!: NonNullable<typeof current>;
      const done = new Promise<void>((resolve) => {
        run = { finished, failed, done: resolve, failedOnce: () => {} };
      });
      // Settles only when the worker failed: the sweep then stops waiting for the others.
      const failedOnce = new Promise<void>((resolve) => {
        run.failedOnce = resolve;
      });
      current = run;
      worker.ref();
      // The history's data crosses only to a worker that does not hold it yet.
      worker.postMessage((historyId === work.history.id ? { ...work, history: { id: work.history.id } } : work) satisfies WorkerMessage);
      historyId = work.history.id;
      return { done, failedOnce };
    },
    forget() {
      if (historyId === undefined || dead) return;
      historyId = undefined;
      worker.postMessage({ forget: true } satisfies WorkerMessage);
    },
    async close(): Promise<void> {
      // A run still going fails now: nothing else would settle it once the worker is gone.
      lost(new Error('the sweep was stopped before its runs finished'));
      await worker.terminate();
    },
    get alive() {
      return dead === undefined;
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
