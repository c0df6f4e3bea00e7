/**
 * Backtest replay speed and memory, on a synthetic cache of 40 indexes x 4 years of hourly
 * points (15 constituents each, weekly rebalances announced 3 days ahead). Every row below
 * runs in its own process, so its peak RSS is its own; beside it, what the run keeps (the JS
 * heap and array buffers in use after a full collection at its end, its result held), which
 * peak RSS hides under the room V8 gives its young generation and malloc keeps for freed blobs:
 * - bare: a row-by-row better-sqlite3 iterate over the same rows and columns the replay reads
 *   (the plain way to read them; the replay reads them grouped, one row per time);
 * - no-op: the replay into a strategy with an empty handler for every event type;
 * - rebalance-front-run: the example strategy, with its default params;
 * - the backtest command: `indexbot backtest` of rebalance-front-run over 10x1 and 40x4 from
 *   this checkout's bin, report files written, its peak RSS (a module preloaded reads it at exit);
 * - a 16-set sweep of rebalance-front-run over 10x1 and over 10x4, on one thread and on one
 *   per core (each in its own process, with its peak RSS), each run's report.json and
 *   report.html made as `backtest --grid` makes them; the summary's speed-up is the lower of
 *   the two. Each is run twice, alternating, and the faster taken. The sweeps run the built
 *   package (dist/, built first, on plain Node, the strategy's TypeScript through tsx as the
 *   package loads it), as an installed indexbot runs them: from source, every worker thread
 *   also compiles the whole of src/ through tsx as it starts. Beside each, for comparison:
 *   as many processes as cores, started at once and sharing nothing, each running its share
 *   of the sets on one thread.
 * - a search as optimize runs it: 16 trials of rebalance-front-run over 10x1, one at a time on
 *   one thread (optimize's default --batch 1) and two at a time on two threads, each run on
 *   threads kept between trials with the range read once (a SweepSession, as optimize and
 *   walk-forward now run), against a new sweep per trial (how they ran before: threads started
 *   and the range read for every trial). Each in its own process, twice alternating, the faster.
 * - two warm threads (code loaded and compiled, history in memory) of one process: a run's time
 *   alone and while the other runs too, alternating, to tell what a sweep's threads lose to each
 *   other from what they lose at their start; and, before, a new thread's first runs alone and
 *   two new threads' first runs at once (each thread's code is compiled anew, on shared cores).
 * Ends with one `backtest-summary` line for scripts.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { RecordedHistory, SweepSession, reportFiles, runBacktest, runSweep } from '../src/backtest/index.ts';
import type { HistoryPoint, Rebalance } from '../src/contract/index.ts';
import { SnapshotStore } from '../src/store/index.ts';
import { type LoadedStrategy, defineStrategy, loadStrategy } from '../src/strategy/index.ts';

const MAX_INDEXES = 40;
const MAX_YEARS = 4;
const CONSTITUENTS = 15;
const FROM = Date.UTC(2022, 0, 1);
const YEAR_HOURS = 365 * 24;
const H = 3_600_000;
const endOf = (years: number) => FROM + (years * YEAR_HOURS - 1) * H;
const indexesOf = (n: number) => Array.from({ length: n }, (_, x) => `idx${x}`);

/** A small seeded PRNG, so every run replays the same market. */
function mulberry32(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Written in time order straight into `history_points` (the store's own writer parses an ISO
 * time and looks a token up per constituent: minutes for 1.4 million points), after the
 * store has made the schema, the token ids and the rebalances.
 */
export function buildCache(path: string): void {
  const random = mulberry32(42);
  const tokens = Array.from({ length: 240 }, (_, i) => ({ address: `Tok${i}`.padEnd(44, 'x'), symbol: `T${i}`, price: 1 + random() * 50, id: 0 }));
  const members = indexesOf(MAX_INDEXES).map((_, x) => Array.from({ length: CONSTITUENTS }, (_, k) => tokens[(x * 5 + k) % tokens.length]!));
  const store = SnapshotStore.open(path);
  store.transaction(() => {
    for (const [x, indexId] of indexesOf(MAX_INDEXES).entries()) {
      for (let week = 1; week < 52 * MAX_YEARS; week++) {
        const effective = FROM + week * 7 * 86_400_000;
        const changes = members[x]!.slice(0, 3).map((m, k) => ({
          address: m.address,
          symbol: m.symbol,
          action: 'increase',
          old_weight: 1 / CONSTITUENTS,
          new_weight: 1 / CONSTITUENTS + 0.01 * (k + 1),
        }));
        const r = {
          id: `rb_${indexId}_${week}`,
          index_id: indexId,
          status: 'completed',
          announced_at: new Date(effective - 3 * 86_400_000).toISOString(),
          effective_at: new Date(effective).toISOString(),
          completed_at: new Date(effective).toISOString(),
          reason: 'scheduled',
          changes,
        } as Rebalance;
        store.upsertRebalance(r, endOf(MAX_YEARS));
      }
    }
    // One throwaway point registers every token id.
    store.history.insertPoints('none', '1d', [
      { timestamp: new Date(0).toISOString(), nav: 1, constituents: tokens.map((t) => ({ address: t.address, symbol: t.symbol, price_usd: 1, weight: 0 })) } as HistoryPoint,
    ]);
  });
  store.close();
  const db = new Database(path);
  db.pragma('synchronous = OFF');
  for (const t of tokens) t.id = db.prepare('SELECT id FROM token_ids WHERE address = ?').pluck().get(t.address) as number;
  const insert = db.prepare('INSERT INTO history_points (interval, ts, index_id, nav, constituents) VALUES (?, ?, ?, ?, ?)');
  const hours = MAX_YEARS * YEAR_HOURS;
  const packed = new Float64Array(CONSTITUENTS * 3);
  const indexIds = indexesOf(MAX_INDEXES);
  for (let h0 = 0; h0 < hours; h0 += 24 * 30) {
    db.transaction(() => {
      for (let h = h0; h < Math.min(hours, h0 + 24 * 30); h++) {
        for (let x = 0; x < MAX_INDEXES; x++) {
          const m = members[x]!;
          let total = 0;
          for (const t of m) total += t.price;
          for (let k = 0; k < CONSTITUENTS; k++) {
            packed[k * 3] = m[k]!.id;
            packed[k * 3 + 1] = m[k]!.price;
            packed[k * 3 + 2] = m[k]!.price / total;
          }
          insert.run('1h', FROM + h * H, indexIds[x], total, Buffer.from(packed.buffer.slice(0)));
        }
        // Prices move once an hour; a token held by several indexes moves once.
        for (const t of tokens) t.price *= 1 + (random() - 0.5) * 0.01;
      }
    })();
  }
  db.close();
}

const noop: LoadedStrategy = {
  file: fileURLToPath(import.meta.url),
  params: {},
  strategy: defineStrategy({
    name: 'noop',
    params: z.object({}),
    on: { 'rebalance.announced': () => {}, 'rebalance.completed': () => {}, 'rebalance.cancelled': () => {}, 'composition.drift': () => {}, 'performance.updated': () => {} },
  }),
};

/** Only its own file: the other example strategies would add their modules to the row's memory. */
const frontRun = () => loadStrategy(fileURLToPath(new URL('../strategies/rebalance-front-run.ts', import.meta.url)));

interface RunFigures {
  items: number;
  seconds: number;
  cpuSeconds: number;
  fills: number;
  rssMiB: number;
  /** The JS heap and array buffers still in use after a full collection, the run's result held: what the replay keeps, apart from how much room V8 and malloc keep beside it. */
  liveMiB: number;
}

/** One backtest in this process: what the parent reads from its last line. */
async function runOnce(path: string, strategyName: string, indexes: number, years: number): Promise<RunFigures> {
  const cache = SnapshotStore.open(path, { readonly: true });
  const strategy = strategyName === 'noop' ? noop : await frontRun();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const r = await runBacktest({ cache, strategy, indexes: indexesOf(indexes), from: FROM, to: endOf(years), cash: 1e6 });
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  cache.close();
  (globalThis as { gc?: () => void }).gc?.();
  const memory = process.memoryUsage();
  return {
    items: r.replayed,
    seconds,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    fills: r.fills.length,
    rssMiB: process.resourceUsage().maxRSS / 1024,
    liveMiB: (memory.heapUsed + memory.arrayBuffers) / 2 ** 20,
  };
}

/** A better-sqlite3 iterate over the rows the replay reads, in its order. */
function bare(path: string, indexes: number, years: number): { rows: number; seconds: number; cpuSeconds: number } {
  const db = new Database(path, { readonly: true });
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let rows = 0;
  const stmt = db.prepare(
    "SELECT index_id, ts, nav, constituents FROM history_points WHERE interval = '1h' AND ts >= ? AND ts <= ? AND index_id IN (SELECT value FROM json_each(?)) ORDER BY ts, index_id",
  );
  for (const _ of stmt.raw().iterate(FROM, endOf(years), JSON.stringify(indexesOf(indexes)))) rows++;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  db.close();
  return { rows, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

interface SweepFigures {
  seconds: number;
  /** CPU time of the whole process (all its threads) over the sweep: near `seconds` x threads when no thread waits or starves. */
  cpuSeconds: number;
  /** SHA-256 of each run's report.json, in the jobs' order. */
  reports: string[];
  /** Peak RSS of the process: each thread keeps the history it replays, and every run's report files are held until the end. */
  rssMiB: number;
}

/**
 * 16 trials of rebalance-front-run over `indexes` x `years`, `batch` at a time as optimize
 * proposes them, on `workers` threads: through one session, or a new sweep for each batch.
 */
async function search(path: string, how: 'session' | 'fresh', batch: number, workers: number, indexes: number, years: number): Promise<{ seconds: number; metrics: string }> {
  const file = fileURLToPath(new URL('../strategies/rebalance-front-run.ts', import.meta.url));
  const settings = { indexes: indexesOf(indexes), from: FROM, to: endOf(years), cash: 1e6 };
  const jobs = Array.from({ length: 16 }, (_, i) => ({ file, params: { holdHours: 6 + 6 * i } }));
  const batches = Array.from({ length: Math.ceil(16 / batch) }, (_, b) => jobs.slice(b * batch, b * batch + batch));
  const t = performance.now();
  const results = [];
  const session = new SweepSession({ db: path, workers });
  try {
    for (const jobs of batches) results.push(...(how === 'session' ? await session.run(settings, jobs) : await runSweep({ db: path, settings, jobs, workers })));
  } finally {
    await session.close();
  }
  return {
    seconds: (performance.now() - t) / 1000,
    metrics: createHash('sha256')
      .update(JSON.stringify(results.map((r) => r.metrics)))
      .digest('hex'),
  };
}

/** Runs of a new thread before its code is warm: what each thread of a parallel sweep pays again. */
const COLD_RUNS = 6;

interface ThreadFigures {
  /** ms per run of a new thread alone, run by run. */
  coldAlone: number[];
  /** ms per run of two new threads started at once (the mean of the two), run by run. */
  coldTogether: number[];
  /** ms per run of a warm thread alone, and while the other runs one too. */
  alone: number;
  together: number;
}

/**
 * Worker threads, each with the history of `indexes` x `years` in memory and
 * rebalance-front-run loaded: one new thread's first runs alone, then two new threads' first
 * runs at once (V8 compiles each thread's code anew, on the same cores); then, the two warm,
 * three rounds of two runs on one, two on the other, and two on both at once. Milliseconds per
 * run (its report files made, as a sweep makes them).
 */
async function warmThreads(path: string, indexes: number, years: number): Promise<ThreadFigures> {
  const threads = [0, 1, 2].map(() => new Worker(new URL(import.meta.url), { workerData: { path, indexes, years } }));
  const reply = <T>(w: Worker) => new Promise<T>((resolve, reject) => w.once('message', resolve).once('error', reject));
  const runs = (w: Worker, count: number) => {
    w.postMessage(count);
    return reply<number[]>(w);
  };
  try {
    await Promise.all(threads.map((w) => reply(w)));
    const [lone, ...pair] = threads as [Worker, Worker, Worker];
    const coldAlone = await runs(lone, COLD_RUNS);
    await lone.terminate();
    const [a, b] = await Promise.all(pair.map((w) => runs(w, COLD_RUNS)));
    const coldTogether = a!.map((ms, i) => (ms + b![i]!) / 2);
    const alone: number[] = [];
    const together: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const w of pair) alone.push(...(await runs(w, 2)));
      together.push(...(await Promise.all(pair.map((w) => runs(w, 2)))).flat());
    }
    const mean = (list: number[]) => list.reduce((x, y) => x + y, 0) / list.length;
    return { coldAlone, coldTogether, alone: mean(alone), together: mean(together) };
  } finally {
    await Promise.all(threads.map((w) => w.terminate()));
  }
}

/** A thread of {@link warmThreads}: says it is ready, then runs as many backtests as each message asks and answers their times. */
async function warmThread(o: { path: string; indexes: number; years: number }): Promise<void> {
  const cache = SnapshotStore.open(o.path, { readonly: true });
  const settings = { indexes: indexesOf(o.indexes), from: FROM, to: endOf(o.years), cash: 1e6 };
  const history = new RecordedHistory(cache, 2 ** 30);
  history.keep(settings.indexes, '1h', settings.from, settings.to);
  const strategy = await frontRun();
  parentPort!.on('message', async (count: number) => {
    const times: number[] = [];
    for (let i = 0; i < count; i++) {
      const t = performance.now();
      reportFiles(await runBacktest({ ...settings, cache, history, strategy }));
      times.push(performance.now() - t);
    }
    parentPort!.postMessage(times);
  });
  parentPort!.postMessage('ready');
}

/**
 * `indexbot backtest` of rebalance-front-run as a user runs it (this checkout's bin, so the
 * source through tsx), report.json and report.html written: what the replay rows leave out.
 */
function backtestCommand(path: string, indexes: number, years: number): { seconds: number; rssMiB: number; reportMiB: number } {
  const out = mkdtempSync(join(tmpdir(), 'indexbot-backtest-out-'));
  try {
    const args = ['--db', path, '--strategy', fileURLToPath(new URL('../strategies/rebalance-front-run.ts', import.meta.url)), '--indexes', indexesOf(indexes).join(',')];
    args.push('--from', new Date(FROM).toISOString(), '--to', new Date(endOf(years)).toISOString(), '--cash', '1000000', '--out', out, '--log-level', 'warn');
    const t = performance.now();
    const run = spawnSync(
      process.execPath,
      ['--import', fileURLToPath(new URL('./peak-rss.mjs', import.meta.url)), fileURLToPath(new URL('../bin/indexbot.js', import.meta.url)), 'backtest', ...args],
      {
        encoding: 'utf8',
      },
    );
    const seconds = (performance.now() - t) / 1000;
    const peak = /peak-rss-kib (\d+)/.exec(run.stderr)?.[1];
    if (run.status !== 0 || peak === undefined) throw new Error(`indexbot backtest exited ${run.status}: ${run.stderr.trim()}`);
    return { seconds, rssMiB: Number(peak) / 1024, reportMiB: statSync(join(out, 'report.json')).size / 2 ** 20 };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/**
 * A child runs this file through tsx, `indexbot` imports going to src/; a sweep's child runs
 * backtest-sweep.mjs (16 parameter sets, `first` to `first + count - 1`, on the built package)
 * on plain Node. Serial and parallel each run in a process of their own, set up alike.
 */
const childArgs = ([mode, ...args]: string[]) =>
  mode === '--sweep'
    ? [fileURLToPath(new URL('./backtest-sweep.mjs', import.meta.url)), args[0]!, args[1]!, args[2] ?? '10', args[3] ?? '1', args[4] ?? '0', args[5] ?? '16']
    : ['--expose-gc', '--import', fileURLToPath(new URL('../scripts/register-source-imports.mjs', import.meta.url)), fileURLToPath(import.meta.url), mode!, ...args];
const lastLine = <T>(out: string) => JSON.parse(out.trim().split('\n').at(-1)!) as T;

function child<T>(args: string[]): T {
  return lastLine<T>(execFileSync(process.execPath, childArgs(args), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
}

async function childAsync<T>(args: string[]): Promise<T> {
  return lastLine<T>((await promisify(execFile)(process.execPath, childArgs(args), { encoding: 'utf8' })).stdout);
}

export async function run(): Promise<void> {
  // On tmpfs where there is one: the cache is 700 MB, and a disk shared with others makes the build slow, not the replay.
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'indexbot-backtest-'));
  const path = join(dir, 'cache.db');
  try {
    const t0 = performance.now();
    child(['--build', path]);
    console.log(
      `backtest: synthetic cache of ${MAX_INDEXES} indexes x ${MAX_YEARS} years of hourly points (${CONSTITUENTS} constituents, weekly rebalances), built in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    console.log('  each row in its own process; items = history points + rebalance status changes replayed');
    const summary: Record<string, string> = {};
    for (const [indexes, years] of [
      [10, 1],
      [10, 4],
      [40, 1],
      [40, 4],
    ] as const) {
      const b = child<{ rows: number; seconds: number }>(['--bare', path, String(indexes), String(years)]);
      const bareRate = b.rows / b.seconds;
      console.log(`  ${indexes}x${years}  bare better-sqlite3 iterate     ${bareRate.toFixed(0).padStart(9)} rows/s   ${b.seconds.toFixed(2).padStart(6)} s  (${b.rows} rows)`);
      for (const name of ['noop', 'rebalance-front-run']) {
        const r = child<RunFigures>(['--run', path, name, String(indexes), String(years)]);
        const rate = r.items / r.seconds;
        console.log(
          `  ${indexes}x${years}  ${name.padEnd(28)}  ${rate.toFixed(0).padStart(9)} items/s  ${r.seconds.toFixed(2).padStart(6)} s  ${(rate / bareRate).toFixed(2)}x bare  peak RSS ${r.rssMiB.toFixed(0)} MiB, live after GC ${r.liveMiB.toFixed(1)} MiB  (${r.items} items, ${r.fills} fills)`,
        );
        // The worst ratio of the rows: the goal holds for every size.
        if (name === 'noop') summary.noop_ratio = Math.min(Number(summary.noop_ratio ?? Infinity), rate / bareRate).toFixed(2);
        if (indexes === 40 && years === 4) summary.rss_40x4_mib = String(Math.max(Number(summary.rss_40x4_mib ?? 0), Math.round(r.rssMiB)));
        if (name !== 'noop' && indexes === 40 && years === 1) summary.frontrun_40x1_s = r.seconds.toFixed(1);
      }
    }
    {
      const [small, large] = [backtestCommand(path, 10, 1), backtestCommand(path, 40, 4)];
      console.log(
        `  indexbot backtest rebalance-front-run, report files written (the whole command: start, replay, report): 10x1 ${small.seconds.toFixed(1)} s, peak RSS ${small.rssMiB.toFixed(0)} MiB (report.json ${small.reportMiB.toFixed(1)} MiB); 40x4 ${large.seconds.toFixed(1)} s, peak RSS ${large.rssMiB.toFixed(0)} MiB (report.json ${large.reportMiB.toFixed(1)} MiB); ${(large.rssMiB / small.rssMiB).toFixed(2)}x`,
      );
      summary.rss_40x4_mib = String(Math.max(Number(summary.rss_40x4_mib ?? 0), Math.round(large.rssMiB)));
    }
    // The package as installed: dist/, compiled as `npm pack` compiles it.
    execFileSync(process.execPath, [fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url)), '-p', fileURLToPath(new URL('../tsconfig.build.json', import.meta.url))], {
      stdio: 'inherit',
    });
    // Two sizes: short runs (10x1, about half a second each) show what each thread's start
    // and warm-up cost; runs of about two seconds (10x4) show the steady state.
    const workers = availableParallelism();
    for (const [indexes, years] of [
      [10, 1],
      [10, 4],
    ] as const) {
      const size = [String(indexes), String(years)];
      // Twice each, alternating, and the faster of the two: this machine's speed drifts by
      // tens of percent within minutes, and one serial run at a slow moment made a ratio of it.
      const runs = [1, 2].flatMap(() => [child<SweepFigures>(['--sweep', path, '1', ...size]), child<SweepFigures>(['--sweep', path, String(workers), ...size])]);
      const fastest = (list: SweepFigures[]) => list.reduce((a, b) => (b.seconds < a.seconds ? b : a));
      const serial = fastest(runs.filter((_, i) => i % 2 === 0));
      const parallel = fastest(runs.filter((_, i) => i % 2 === 1));
      // For comparison, no threads: `workers` processes started at once, sharing nothing, each
      // running its share of the sets on one thread (each reads the history and warms up itself).
      const share = Math.ceil(16 / workers);
      const apart = await Promise.all(
        Array.from({ length: workers }, (_, w) => childAsync<SweepFigures>(['--sweep', path, '1', ...size, String(w * share), String(Math.max(0, Math.min(share, 16 - w * share)))])),
      );
      const slowestApart = Math.max(...apart.map((a) => a.seconds));
      const same = runs.every((run) => run.reports.every((r, i) => r === serial.reports[i]));
      const speedup = serial.seconds / parallel.seconds;
      summary.sweep_speedup = Math.min(Number(summary.sweep_speedup ?? Infinity), speedup).toFixed(2);
      console.log(
        `  sweep of 16 parameter sets (rebalance-front-run, ${indexes}x${years}), the built package, each sweep in its own process, the faster of two: 1 worker ${serial.seconds.toFixed(1)} s (process CPU ${serial.cpuSeconds.toFixed(1)} s, peak RSS ${serial.rssMiB.toFixed(0)} MiB), ${workers} workers ${parallel.seconds.toFixed(1)} s (process CPU ${parallel.cpuSeconds.toFixed(1)} s, peak RSS ${parallel.rssMiB.toFixed(0)} MiB), speed-up ${speedup.toFixed(2)}x; report.json ${same ? 'byte-identical' : 'DIFFERENT'}`,
      );
      console.log(
        `    without threads: ${workers} processes at once, each running ${share} of the sets on one thread, the slowest ${slowestApart.toFixed(1)} s: ${(serial.seconds / slowestApart).toFixed(2)}x the 1-worker sweep`,
      );
      // V8 compiles and collects garbage on threads of its own: a 1-worker sweep already keeps
      // more than one core busy, and that core is not free for a second worker.
      const coresSerial = serial.cpuSeconds / serial.seconds;
      console.log(
        `    the 1-worker sweep kept ${coresSerial.toFixed(2)} cores busy (process CPU / wall time; V8's compiler and GC threads beside the one running): at most ${(workers / coresSerial).toFixed(2)}x on ${workers} cores`,
      );
      if (!same) process.exitCode = 1;
    }
    for (const [batch, threads] of [
      [1, 1],
      [Math.min(workers, 16), Math.min(workers, 16)],
    ] as const) {
      const args = (how: string) => ['--search', path, how, String(batch), String(threads), '10', '1'];
      const runs = [1, 2].flatMap(() => [child<{ seconds: number; metrics: string }>(args('fresh')), child<{ seconds: number; metrics: string }>(args('session'))]);
      const best = (how: number) => Math.min(...runs.filter((_, i) => i % 2 === how).map((r) => r.seconds));
      const same = runs.every((r) => r.metrics === runs[0]!.metrics);
      console.log(
        `  search of 16 trials (rebalance-front-run, 10x1), ${batch} at a time on ${threads} thread(s), each in its own process, the faster of two: a new sweep per batch ${best(0).toFixed(1)} s, one session ${best(1).toFixed(1)} s: ${(best(0) / best(1)).toFixed(2)}x; metrics ${same ? 'identical' : 'DIFFERENT'}`,
      );
      if (!same) process.exitCode = 1;
    }
    {
      const w = child<ThreadFigures>(['--warm', path, '10', '1']);
      const ms = (list: number[]) => list.map((x) => x.toFixed(0)).join(' ');
      console.log(
        `  two warm threads of one process (rebalance-front-run, 10x1, code compiled, history in memory): a run ${w.alone.toFixed(0)} ms alone, ${w.together.toFixed(0)} ms while the other thread runs one too (x${(w.together / w.alone).toFixed(2)}); a sweep's threads lose the rest at their start:`,
      );
      // V8 compiles each thread's code anew: a serial sweep pays this once, a parallel one on every thread at once.
      console.log(`    a new thread's first ${COLD_RUNS} runs, ms: alone ${ms(w.coldAlone)}; two new threads at once ${ms(w.coldTogether)} (the mean of the two)`);
    }
    console.log(`backtest-summary noop_ratio=${summary.noop_ratio} rss_40x4_mib=${summary.rss_40x4_mib} frontrun_40x1_s=${summary.frontrun_40x1_s} sweep_speedup=${summary.sweep_speedup}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (!isMainThread) await warmThread(workerData as { path: string; indexes: number; years: number });
else if (import.meta.url === `file://${process.argv[1]}`) {
  const [mode, path, ...rest] = process.argv.slice(2);
  if (mode === '--build') {
    buildCache(path!);
    console.log('{}');
  } else if (mode === '--bare') console.log(JSON.stringify(bare(path!, Number(rest[0]), Number(rest[1]))));
  else if (mode === '--warm') console.log(JSON.stringify(await warmThreads(path!, Number(rest[0]), Number(rest[1]))));
  else if (mode === '--search') console.log(JSON.stringify(await search(path!, rest[0] as 'session' | 'fresh', Number(rest[1]), Number(rest[2]), Number(rest[3]), Number(rest[4]))));
  else if (mode === '--run') console.log(JSON.stringify(await runOnce(path!, rest[0]!, Number(rest[1]), Number(rest[2]))));
  else await run();
}
