/** The worker threads of a sweep session, and what passes between them and the session. */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type ErrorCode, type ErrorKind, IndexbotError, type Logger } from '../core/index.ts';
import type { RecordingData, SharedBudget, SharedHistory } from './recorded-history.ts';
import type { ReplayRange } from './replay.ts';
import type { SweepJob, SweepOutput, SweepRunOutput, SweepSettings } from './sweep.ts';

/** What a worker is given for each sweep: every job, and the counter the threads take them from. */
export interface SweepWork {
  db: string;
  settings: SweepSettings;
  /** What the session settled for `settings`, when the cache could serve them: each run then settles nothing again. */
  range: ReplayRange | undefined;
  jobs: readonly SweepJob[];
  output: SweepOutput;
  next: SharedArrayBuffer;
  /** The history the runs replay, numbered within the session: a worker that holds this one already is not sent its data again. */
  history: { id: number; data?: SharedHistory };
}

/** A piece of the history a sweep replays, for a worker to read ({@link recordMoments}) while the others read the rest. */
export interface PieceRead {
  db: string;
  indexIds: readonly string[];
  interval: string;
  from: number;
  to: number;
  /** What the whole range may take, shared by the threads reading its pieces. */
  budget: SharedBudget;
}

/** What a worker is sent: a sweep's work, strategy files to start loading, a piece of its history to read, or word to let its history go. */
export type WorkerMessage = SweepWork | { load: readonly string[] } | { read: PieceRead } | { forget: true };

/** A line a worker's run logged, for the sweep's logger here: only a worker thread's own writes to standard error could interleave mid-line. */
export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: object;
  msg: string | undefined;
}

/**
 * A message back from a worker: that its code is loaded, a line logged, a piece it read (or
 * why not), a job's result or the error it threw (rebuilt here with its code), or that it
 * found no job left.
 */
export type WorkerReply =
  | { started: true }
  | { log: LogLine }
  | { piece: RecordingData | 'over budget' }
  | { pieceFailed: string }
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
  /** True once the worker has loaded its code; false if it died first. */
  readonly started: Promise<boolean>;
  /** Starts loading strategy files there, for the runs to come. */
  preload(files: readonly string[]): void;
  /** Reads a piece of a sweep's history; fails if the read failed there or the worker died. One at a time. */
  read(piece: PieceRead): Promise<RecordingData | 'over budget'>;
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
  let markStarted!: (started: boolean) => void;
  const started = new Promise<boolean>((resolve) => {
    markStarted = resolve;
  });
  let reading: { resolve: (piece: RecordingData | 'over budget') => void; reject: (e: Error) => void } | undefined;
  const readEnded = () => {
    const read = reading;
    reading = undefined;
    if (!current) worker.unref();
    return read;
  };
  let current: { finished: (index: number, result: SweepRunOutput) => void; failed: (index: number, error: Error) => void; done: () => void; failedOnce: () => void } | undefined;
  let dead: Error | undefined;
  const end = () => {
    current = undefined;
    if (!reading) worker.unref();
  };
  const lost = (e: Error) => {
    dead ??= e;
    markStarted(false);
    readEnded()?.reject(e);
    if (!current) return;
    const run = current;
    end();
    run.failed(Number.MAX_SAFE_INTEGER, e);
    run.failedOnce();
  };
  worker.on('message', (reply: WorkerReply) => {
    if ('log' in reply) logger[reply.log.level](reply.log.obj, reply.log.msg);
    else if ('started' in reply) markStarted(true);
    else if ('piece' in reply) readEnded()?.resolve(reply.piece);
    else if ('pieceFailed' in reply) readEnded()?.reject(new Error(reply.pieceFailed));
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
    started,
    preload(files) {
      if (!dead) worker.postMessage({ load: files } satisfies WorkerMessage);
    },
    read(piece) {
      if (dead) return Promise.reject(dead);
      if (reading) return Promise.reject(new Error('a sweep worker reads one piece at a time'));
      return new Promise((resolve, reject) => {
        reading = { resolve, reject };
        // Held while it reads: the session waits on it and on nothing else.
        worker.ref();
        worker.postMessage({ read: piece } satisfies WorkerMessage);
      });
    },
    run(work, finished, failed) {
      // Died since the session last looked (while the history was read, say): the sweep fails as if it had died in a run, never waiting on it.
      if (dead) {
        failed(Number.MAX_SAFE_INTEGER, dead);
        return { done: Promise.resolve(), failedOnce: Promise.resolve() };
      }
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
