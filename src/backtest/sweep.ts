import { closeSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import { type Logger, checkOptionRange, makeDirectories, silentLogger } from '../core/index.ts';
import { SnapshotStore } from '../store/index.ts';
import { type Strategy, loadStrategyModule, strategySourceHash, withParams } from '../strategy/index.ts';
import { renderHtml } from './html.ts';
import type { EquityPoint, StrategyMetrics } from './metrics.ts';
import { INTERVAL_MS } from '../contract/index.ts';
import { type BacktestOptions, type BacktestResult, type ReplayRange, replayRange, runBacktest, runBacktestIn } from './replay.ts';
import { RecordedHistory, type RecordingData, type SharedHistory, joinRecordings, recordMoments, sharedBudget } from './recorded-history.ts';
import { type BacktestReport, type ReportSummary, buildReport, reportJson, reportJsonChunks, reportSummary } from './report.ts';
import { type PieceRead, type PooledWorker, type SweepWork, type WorkerRun, startWorker } from './sweep-pool.ts';

/** What a sweep tells of itself as it goes. */
type SweepCallbacks = Pick<SweepOptions, 'onRun' | 'onStart'>;

/** What a worker needs for one run: plain data, as it crosses a thread boundary. */
export type SweepSettings = Omit<BacktestOptions, 'cache' | 'strategy' | 'logger' | 'onProgress' | 'history'>;

export interface SweepJob {
  /** The strategy file, loaded once by each thread of the sweep. */
  file: string;
  /** Params before the strategy's schema (defaults are filled in there). */
  params: Record<string, unknown>;
}

export interface SweepOptions {
  /** The cache file; each thread opens it read-only, once for all its runs. */
  db: string;
  settings: SweepSettings;
  jobs: readonly SweepJob[];
  /**
   * Threads running backtests, this one included (so `workers - 1` worker threads); 1 runs
   * every job in this thread. @default the number of cores, fewer for a short sweep: each
   * thread is given at least {@link ITEMS_PER_THREAD} items to replay
   */
  workers?: number;
  logger?: Logger;
  /** Each finished run, in the order they finish. */
  onRun?: (done: number, total: number) => void;
  /** The threads the sweep runs on, this one included, once it has settled how many (`workers`, or the default's pick). */
  onStart?: (threads: number) => void;
}

/** A run's report.json and report.html, made in the thread that ran it. */
export interface ReportFiles {
  json: string;
  html: string;
}

/** A run's figures, what a parameter search ranks runs by: a small object, whatever the run traded. */
export interface RunFigures {
  runId: string;
  /** The params after the strategy's schema (defaults filled in). */
  params: unknown;
  metrics: StrategyMetrics;
  equity: EquityPoint[];
  /** Events whose handler failed and were skipped: the figures miss what it would have done. */
  failedEvents: number;
}

/**
 * What each run gives back: its whole result; its figures alone (no fill list crosses threads);
 * its report files; or, with `dir`, its report's
 * summary once the thread that ran it wrote report.json and report.html to `dir/<run id>/`
 * (no report crosses threads or waits for the others in memory, and a sweep stopped halfway
 * keeps the runs it finished).
 */
export type SweepOutput = 'result' | 'figures' | 'report' | { dir: string };
type OutputOf<O extends SweepOutput> = O extends 'report' ? ReportFiles : O extends 'figures' ? RunFigures : O extends { dir: string } ? ReportSummary : BacktestResult;
/** Any run's output. */
export type SweepRunOutput = BacktestResult | RunFigures | ReportFiles | ReportSummary;

export const MAX_WORKERS = 64;

/** A run's report files, as `backtest` writes them. */
export function reportFiles(result: BacktestResult): ReportFiles {
  const report = buildReport(result);
  return { json: reportJson(report), html: renderHtml(report) };
}

/** Writes a run's report.json (a piece at a time) and report.html to `dir`, made if missing. */
export function writeReportFiles(report: BacktestReport, dir: string): void {
  makeDirectories(dir);
  const fd = openSync(join(dir, 'report.json'), 'w');
  try {
    for (const chunk of reportJsonChunks(report)) writeSync(fd, chunk);
  } finally {
    closeSync(fd);
  }
  writeFileSync(join(dir, 'report.html'), renderHtml(report));
}

function outputOf(result: BacktestResult, output: SweepOutput): SweepRunOutput {
  if (output === 'result') return result;
  if (output === 'figures') return { runId: result.runId, params: result.strategy.params, metrics: result.metrics, equity: result.equity, failedEvents: result.parked.count };
  if (output === 'report') return reportFiles(result);
  const report = buildReport(result);
  // Written aside and renamed whole: a sweep stopped midway (Ctrl-C ends the process, its threads mid-write) leaves no run folder half made.
  const dir = join(output.dir, report.runId);
  const partial = `${dir}${PARTIAL_SUFFIX}`;
  rmSync(partial, { recursive: true, force: true });
  writeReportFiles(report, partial);
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  return reportSummary(report);
}

/** A sweep's run folder while its reports are being written. */
export const PARTIAL_SUFFIX = '.partial';

/**
 * What one thread of a sweep keeps for all the runs it makes: the cache, open read-only once;
 * the history every run of the sweep replays, read once before the runs and shared by the
 * threads (a {@link SharedHistory}), as freqtrade's hyperopt runs every epoch on data loaded
 * once; and each strategy file loaded once (as a freqtrade hyperopt process loads its
 * strategy once): a file and everything it imports evaluated for every run cost more than a
 * short run itself. A run's state lives in `ctx.state`, never in module variables. The same
 * code runs a job on this thread and on a worker, so serial and parallel give the same bytes.
 */
export class SweepThread {
  private cache: { store: SnapshotStore; history: RecordedHistory } | undefined;

  constructor(
    private readonly db: string,
    private readonly history: SharedHistory,
    private readonly modules: StrategyModules,
  ) {}

  /**
   * Runs job `index` of the sweep; what its strategy logs carries the run's number (from 1) and
   * params, so a sweep's lines can be told apart. `range`, what the sweep settled for
   * `settings` on this cache, spares each run settling it again.
   */
  async run<O extends SweepOutput>(settings: SweepSettings, job: SweepJob, index: number, output: O, logger: Logger = silentLogger, range?: ReplayRange): Promise<OutputOf<O>> {
    // Opened by the first run, so that a cache that cannot be opened fails a run like any other error.
    if (!this.cache) {
      const store = SnapshotStore.open(this.db, { readonly: true });
      this.cache = { store, history: RecordedHistory.fromShared(store, this.history) };
    }
    const strategy = strategyModule(this.modules, job.file);
    const options: BacktestOptions = {
      ...settings,
      cache: this.cache.store,
      history: this.cache.history,
      strategy: withParams(await strategy, job.file, job.params),
      logger: logger.child({ run: index + 1, params: job.params }),
    };
    const result = await (range ? runBacktestIn(range, options) : runBacktest(options));
    // The report is made here, beside the run: only its text, or its summary, crosses to the caller.
    return outputOf(result, output) as OutputOf<O>;
  }

  close(): void {
    this.cache?.store.close();
  }
}

/** The strategy files a thread has loaded (or is loading), each once for all the sweeps of its session, by file and source hash. */
export type StrategyModules = Map<string, Promise<Strategy>>;

/**
 * Starts loading each of `files` not loaded yet, without waiting: a thread loads its strategies
 * while the sweep's history is read, not after (a TypeScript file through tsx took a fifth of a
 * second, on each thread). A file that fails to load fails the runs that need it, when they do.
 */
export function preloadStrategies(modules: StrategyModules, files: readonly string[]): void {
  for (const file of files) void strategyModule(modules, file);
}

/**
 * The strategy in `file` as its source is now: loaded once while it stays the same. A file
 * changed between two sweeps of a session is loaded anew, so a run runs the code its report's
 * source hash names; one that failed to load is tried again by the next sweep (fixed, maybe).
 */
function strategyModule(modules: StrategyModules, file: string): Promise<Strategy> {
  let source: string;
  try {
    source = strategySourceHash(file);
  } catch {
    // Unreadable: the load says why, as without this.
    source = '';
  }
  const key = `${file}\n${source}`;
  let loading = modules.get(key);
  if (!loading) {
    loading = loadStrategyModule(file);
    // Awaited by the runs, whose failure it is: not an unhandled rejection before them.
    loading.catch(() => modules.delete(key));
    modules.set(key, loading);
  }
  return loading;
}

/**
 * Runs a sweep's backtests on `workers` threads: this one, which has the code loaded and
 * warm, and `workers - 1` worker threads. Each thread takes the next job from a counter they
 * share as soon as it is free, so no thread idles while jobs remain and none waits on this
 * thread to hand it work. Results come back in the jobs' order whatever order the runs finish
 * in. On a failure no job starts any more; the first error (in the jobs' order among those
 * that ran) is thrown once the runs in flight are done or stopped.
 */
export function runSweep(o: SweepOptions): Promise<BacktestResult[]>;
/** Each run's figures instead of its result. */
export function runSweep(o: SweepOptions & { output: 'figures' }): Promise<RunFigures[]>;
/** Each run's report files instead of its result, made on the thread that ran it. */
export function runSweep(o: SweepOptions & { output: 'report' }): Promise<ReportFiles[]>;
/** Each run's report summary, its files written to `dir/<run id>/` by the thread that ran it. */
export function runSweep(o: SweepOptions & { output: { dir: string } }): Promise<ReportSummary[]>;
export async function runSweep(o: SweepOptions & { output?: SweepOutput }): Promise<SweepRunOutput[]> {
  const session = new SweepSession(o);
  try {
    return await session.run(o.settings, o.jobs, { output: o.output ?? 'result', onRun: o.onRun, onStart: o.onStart });
  } finally {
    await session.close();
  }
}

/**
 * Sweeps one after another on the same threads: what a search (optimize, walk-forward) runs,
 * a few trials at a time. The worker threads stay up between sweeps, their code loaded and
 * warm, and the history a sweep read is kept for the next sweep of the same range: optimize
 * runs every trial over one range, and reading it again for each trial took longer than the
 * trial. Only the last range read is kept. Sweeps run one at a time; {@link close} ends the
 * workers (idle ones never keep the process alive).
 */
export class SweepSession {
  private readonly workers: PooledWorker[] = [];
  private readonly modules: StrategyModules = new Map();
  private history: { key: string; id: number; shared: SharedHistory; thread: SweepThread } | undefined;
  private histories = 0;
  private busy = false;
  private closed = false;

  constructor(private readonly o: Pick<SweepOptions, 'db' | 'workers' | 'logger'>) {
    checkOptionRange('workers', o.workers, { min: 1, max: MAX_WORKERS });
  }

  run(settings: SweepSettings, jobs: readonly SweepJob[], o?: { output?: 'result' } & SweepCallbacks): Promise<BacktestResult[]>;
  run(settings: SweepSettings, jobs: readonly SweepJob[], o: { output: 'figures' } & SweepCallbacks): Promise<RunFigures[]>;
  run(settings: SweepSettings, jobs: readonly SweepJob[], o: { output: 'report' } & SweepCallbacks): Promise<ReportFiles[]>;
  run(settings: SweepSettings, jobs: readonly SweepJob[], o: { output: { dir: string } } & SweepCallbacks): Promise<ReportSummary[]>;
  run(settings: SweepSettings, jobs: readonly SweepJob[], o: { output?: SweepOutput } & SweepCallbacks): Promise<SweepRunOutput[]>;
  async run(settings: SweepSettings, jobs: readonly SweepJob[], o: { output?: SweepOutput } & SweepCallbacks = {}): Promise<SweepRunOutput[]> {
    if (this.closed) throw new Error('this SweepSession is closed');
    if (this.busy) throw new Error('a SweepSession runs one sweep at a time');
    this.busy = true;
    try {
      return await this.sweep(settings, jobs, o.output ?? 'result', o);
    } finally {
      this.busy = false;
      if (this.closed) this.releaseHistory();
    }
  }

  private async sweep(settings: SweepSettings, jobs: readonly SweepJob[], output: SweepOutput, { onRun, onStart }: SweepCallbacks): Promise<SweepRunOutput[]> {
    const total = jobs.length;
    const results: SweepRunOutput[] = new Array(total);
    const errors: { index: number; error: Error }[] = [];
    const next = new Int32Array(new SharedArrayBuffer(4));
    let done = 0;
    const finished = (index: number, result: SweepRunOutput) => {
      results[index] = result;
      onRun?.(++done, total);
    };
    const failed = (index: number, error: Error) => {
      errors.push({ index, error });
      // No thread takes another job.
      Atomics.store(next, 0, total);
    };
    const range = new SweepHistory(this.o.db, settings);
    const threads = Math.min(this.o.workers ?? defaultThreads(range.points, total), total);
    onStart?.(threads);
    const logger = this.o.logger ?? silentLogger;
    // One that died between sweeps is replaced; started first: they load the code while this thread reads the history.
    for (let i = this.workers.length - 1; i >= 0; i--) if (!this.workers[i]!.alive) this.workers.splice(i, 1);
    while (this.workers.length < threads - 1) this.workers.push(startWorker(logger));
    const workers = this.workers.slice(0, threads - 1);
    const files = [...new Set(jobs.map((j) => j.file))];
    preloadStrategies(this.modules, files);
    for (const w of workers) w.preload(files);
    const runs: WorkerRun[] = [];
    let history: NonNullable<SweepSession['history']> | undefined;
    let settled = false;
    try {
      history = await this.historyFor(range, workers);
      // Closed while the history was read: its workers are gone, and no run starts.
      if (this.closed) throw new Error('the sweep was stopped before its runs finished');
      const work: SweepWork = { db: this.o.db, settings, range: range.settled, jobs, output, next: next.buffer as SharedArrayBuffer, history: { id: history.id, data: history.shared } };
      for (const w of workers) runs.push(w.run(work, finished, failed));
      for (let i = Atomics.add(next, 0, 1); i < total; i = Atomics.add(next, 0, 1)) {
        try {
          finished(i, await history.thread.run(settings, jobs[i]!, i, output, logger, range.settled));
        } catch (e) {
          failed(i, e instanceof Error ? e : new Error(String(e)));
        }
        // A run never waits on the event loop: between two, the workers' lines and finished runs are taken in, not held to the end.
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (errors.length === 0) await Promise.race([Promise.all(runs.map((r) => r.done)), ...runs.map((r) => r.failedOnce)]);
      settled = errors.length === 0;
    } finally {
      if (history && history !== this.history) history.thread.close();
      // After a failure the workers' runs are stopped, not waited for: a later sweep starts new ones.
      if (!settled) await this.stopWorkers();
    }
    if (errors.length > 0) throw errors.sort((a, b) => a.index - b.index)[0]!.error;
    return results;
  }

  /** The history of `range`, read now (in pieces, on this thread and `workers` as they start) unless the last sweep read it. */
  private async historyFor(range: SweepHistory, workers: readonly PooledWorker[]): Promise<NonNullable<SweepSession['history']>> {
    if (this.history && range.key !== undefined && this.history.key === range.key) return this.history;
    this.releaseHistory();
    // Every thread lets the last range go before this one is read: never two in memory at once.
    for (const w of this.workers) w.forget();
    const shared = await range.read(workers);
    const history = { key: range.key ?? '', id: ++this.histories, shared, thread: new SweepThread(this.o.db, shared, this.modules) };
    // A range that could not be read is not kept: the runs meet what failed themselves, each time.
    if (range.key !== undefined) this.history = history;
    return history;
  }

  private async stopWorkers(): Promise<void> {
    await Promise.all(this.workers.splice(0).map((w) => w.close()));
  }

  private releaseHistory(): void {
    this.history?.thread.close();
    this.history = undefined;
  }

  /**
   * Ends the worker threads and closes the cache; the session runs no sweep after. A sweep
   * still running fails: its workers' runs stop, the run on this thread ends first.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (!this.busy) this.releaseHistory();
    await this.stopWorkers();
  }
}

/**
 * Items (history points, over all the runs) a thread should have to replay for starting it
 * to pay off. A worker loads the code and warms V8's compiler up on its own, and the threads
 * contend while they warm up. On 2 cores, from the built package: 8 runs of 10 indexes x
 * 1 year (0.7 million items) took as long on two threads as on one; a trial's 16 runs of
 * 4 indexes over 21 months (1.0 million) 3.2 s on one and 4.5 s on two; 16 of 10 x 1
 * (1.4 million) 0.99-1.21x faster on two, in three bench runs; the trial's 16 of 8 indexes
 * (1.9 million) 1.29x; 16 of 10 x 4 years (5.7 million) 1.48-1.51x. Two threads from
 * 1.5 million items on: where the one measure below it lost, and the ones above gained.
 */
export const ITEMS_PER_THREAD = 750_000;

/** One thread per core, but none with less than ITEMS_PER_THREAD to do: two threads made a short sweep slower than one. */
function defaultThreads(points: number, jobs: number): number {
  return Math.max(1, Math.min(availableParallelism(), Math.floor((points * jobs) / ITEMS_PER_THREAD)));
}

/**
 * The history every run of a sweep replays (the runs differ in strategy and params, never in
 * range), read before the runs into memory the threads share. Reading it was about half of a
 * short run, and each thread reading it again for its first run cost a core the time of one
 * read. It is read in pieces of time, by this thread from the start and by each worker as
 * soon as its code is loaded: on one thread, the read was a tenth of a 16-run sweep of
 * 10 indexes x 4 years, with the other core idle. Kept within an eighth of the machine's
 * memory, and no more than 1 GiB: a 10-index year of hourly points takes about 35 MB, 40
 * indexes over four years about 570 MB. A larger range is read from the cache by every run,
 * as it would be without this.
 */
class SweepHistory {
  /** History points the range holds, over its indexes; 0 when the cache cannot serve it. */
  readonly points: number;
  /** What the range is, narrowed to what the cache holds: two sweeps of one key replay the same history. Undefined when the cache cannot serve it. */
  readonly key: string | undefined;
  /** The range as every run of the sweep would settle it; undefined when the cache cannot serve it (each run then fails as it would alone). */
  readonly settled: ReplayRange | undefined;

  constructor(
    private readonly db: string,
    settings: SweepSettings,
  ) {
    // What cannot be read here (no such cache, no data in the range) fails each run, with the
    // error a run gives: this only reads ahead.
    try {
      const store = SnapshotStore.open(db, { readonly: true });
      try {
        this.settled = replayRange(store, settings);
        const range = this.settled.settings;
        this.points = this.settled.coverage.reduce((n, c) => n + c.points, 0);
        this.key = JSON.stringify([range.indexes, range.interval, range.from, range.to]);
      } finally {
        store.close();
      }
    } catch {
      this.points = 0;
      this.key = undefined;
    }
  }

  /** What was kept; nothing when the read failed (the runs then read the cache, and meet what failed here themselves). */
  async read(workers: readonly PooledWorker[]): Promise<SharedHistory> {
    if (this.settled) {
      try {
        const store = SnapshotStore.open(this.db, { readonly: true });
        try {
          const budgetBytes = Math.min(2 ** 30, Math.floor(totalmem() / 8));
          const budget = sharedBudget(budgetBytes);
          const { indexes, interval, from, to } = this.settled.settings;
          const pieces = splitRange(from, to, INTERVAL_MS[interval], pieceCount(this.points, workers.length + 1)).map(
            ([from, to]): PieceRead => ({ db: this.db, indexIds: indexes, interval, from, to, budget }),
          );
          const read = await readPieces(pieces, (p) => recordMoments(store, p.indexIds, p.interval, p.from, p.to, p.budget), workers);
          if (!read.includes('over budget')) {
            const history = new RecordedHistory(store, budgetBytes);
            if (history.keepRead(indexes, interval, from, to, joinRecordings(read as RecordingData[]))) return history.share();
          }
        } finally {
          store.close();
        }
      } catch {}
    }
    return { moments: [], transitions: [], bytes: 0 };
  }
}

/** History points per piece, at least: a piece costs a message each way and a block of its own. */
const PIECE_POINTS = 20_000;

/** Pieces a range is read in: a few per thread, so that a worker that starts late still takes some; one on one thread. */
export function pieceCount(points: number, threads: number): number {
  return threads === 1 ? 1 : Math.max(1, Math.min(threads * 4, Math.floor(points / PIECE_POINTS)));
}

/** [from, to] in `count` closed ranges of whole intervals, in order, that cover it and do not overlap. */
export function splitRange(from: number, to: number, stepMs: number, count: number): [number, number][] {
  const steps = Math.floor((to - from) / stepMs) + 1;
  const size = Math.ceil(steps / count);
  const pieces: [number, number][] = [];
  for (let start = from; start <= to; start += size * stepMs) pieces.push([start, Math.min(to, start + size * stepMs - 1)]);
  return pieces;
}

/** A piece read: its moments, or 'over budget' when the range passed what it may take. */
type PieceData = RecordingData | 'over budget';

/**
 * Reads `pieces` on this thread, from the first, and on each worker from the moment its code is
 * loaded, each taking the next piece as soon as it is free; answers them in order. A piece a
 * worker could not read (it failed there, or died) is read here. Once a piece is over budget,
 * or a read here failed, no piece is handed out any more; what is in flight on the workers is
 * waited for, so that no read goes on past the sweep's start.
 */
export async function readPieces(pieces: readonly PieceRead[], readHere: (piece: PieceRead) => PieceData, workers: readonly Pick<PooledWorker, 'started' | 'read'>[]): Promise<PieceData[]> {
  const read: PieceData[] = new Array(pieces.length);
  let next = 0;
  const got = (k: number, piece: PieceData) => {
    read[k] = piece;
    if (piece === 'over budget') next = pieces.length;
  };
  const onWorkers = new Set<Promise<void>>();
  const take = (w: Pick<PooledWorker, 'read'>) => {
    if (next >= pieces.length) return;
    const k = next++;
    const reading: Promise<void> = w
      .read(pieces[k]!)
      .then(
        (piece) => {
          got(k, piece);
          take(w);
        },
        // It failed there, or died: read here, and it takes no more.
        () => got(k, readHere(pieces[k]!)),
      )
      .finally(() => onWorkers.delete(reading));
    onWorkers.add(reading);
  };
  for (const w of workers) void w.started.then((started) => started && take(w));
  try {
    while (next < pieces.length) {
      const k = next++;
      got(k, readHere(pieces[k]!));
      // The workers' messages (started, a piece read) are taken in between.
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    // Also after a failure here: the workers' reads end before the caller goes on.
    next = pieces.length;
    while (onWorkers.size > 0) await Promise.race(onWorkers).catch(() => {});
  }
  // Over budget, the rest was not read. Otherwise every piece was: one a worker failed and this thread could not read either fails the read.
  if (!read.includes('over budget') && read.some((piece) => piece === undefined)) throw new Error('a piece of the history could not be read');
  return read;
}
