import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { buildReport, renderHtml, reportJson, runBacktest } from '../../src/backtest/index.ts';
import { SweepSession, pieceCount, readPieces, runSweep } from '../../src/backtest/sweep.ts';
import type { PieceRead } from '../../src/backtest/sweep-pool.ts';
import { type RecordingData, sharedBudget } from '../../src/backtest/recorded-history.ts';
import { sweepRunner } from '../../src/research/index.ts';
import { HistoryTables, SnapshotStore } from '../../src/store/index.ts';
import { loadStrategy } from '../../src/strategy/index.ts';
import { utcAxisMismatches } from '../helpers/chart-axes.ts';
import { H, T0, buildCache } from '../helpers/backtest-cache.ts';
import { captureLogger } from '../helpers/fake-transport.ts';

const file = new URL('../fixtures/backtest/announce-buyer.ts', import.meta.url).pathname;

describe('sweeps on worker threads', () => {
  it('give byte-identical report.json files, in the jobs’ order, on one worker or several', async () => {
    const db = buildCache();
    const jobs = [50, 100, 150, 200, 250].map((notionalUsd) => ({ file, params: { notionalUsd } }));
    const settings = { indexes: ['x', 'y'], from: T0, to: T0 + 119 * H };
    const reports = async (workers: number) => (await runSweep({ db, settings, jobs, workers })).map((r) => reportJson(buildReport(r)));
    const serial = await reports(1);
    const parallel = await reports(2);
    const three = await reports(3);
    expect(parallel).toEqual(serial);
    expect(three).toEqual(serial);
    // Made in the thread that ran each job, the report files are the same bytes too.
    const files = await runSweep({ db, settings, jobs, workers: 2, output: 'report' });
    expect(files.map((f) => f.json)).toEqual(serial);
    expect(files.map((f) => f.html)).toEqual(serial.map((r) => renderHtml(JSON.parse(r))));
    expect(serial.map((r) => JSON.parse(r).strategy.params.notionalUsd)).toEqual([50, 100, 150, 200, 250]);
    // The runs replay the history the sweep read before them: the same reports as runs that each read the cache.
    const cache = SnapshotStore.open(db, { readonly: true });
    const alone: string[] = [];
    for (const j of jobs) alone.push(reportJson(buildReport(await runBacktest({ ...settings, cache, strategy: await loadStrategy(file, j.params) }))));
    cache.close();
    expect(serial).toEqual(alone);
    expect(new Set(serial.map((r) => JSON.parse(r).fills.hash)).size).toBe(5);
    // A search's output: each run's figures alone, made where it ran, the same as its result's (the review: every fill crossed threads).
    const figures = await runSweep({ db, settings, jobs, workers: 2, output: 'figures' });
    const results = await runSweep({ db, settings, jobs, workers: 1 });
    expect(figures).toEqual(results.map((r) => ({ runId: r.runId, params: r.strategy.params, metrics: r.metrics, equity: r.equity, failedEvents: r.parked.count })));
    for (const f of figures) expect(Object.keys(f).sort()).toEqual(['equity', 'failedEvents', 'metrics', 'params', 'runId']);
  }, 180_000);

  it('reads a long range in pieces on this thread and the workers, and replays the same history: the same reports as one thread', async () => {
    // 2 x 24,000 points: pieceCount(48,000, 2) = 2 pieces, so a worker that starts in time reads one.
    const hours = 24_000;
    expect(pieceCount(2 * hours, 2)).toBeGreaterThan(1);
    const db = buildCache({ hours });
    const settings = { indexes: ['x', 'y'], from: T0, to: T0 + (hours - 1) * H };
    const jobs = [50, 100, 150].map((notionalUsd) => ({ file, params: { notionalUsd } }));
    const serial = await runSweep({ db, settings, jobs, workers: 1, output: 'report' });
    const parallel = await runSweep({ db, settings, jobs, workers: 2, output: 'report' });
    expect(parallel.map((r) => r.json)).toEqual(serial.map((r) => r.json));
    expect(JSON.parse(serial[0]!.json).events.replayed).toBe(2 * hours + 2);
  }, 180_000);

  it('reads the history once, before the runs, however the range was narrowed', async () => {
    const db = buildCache();
    const reads = vi.spyOn(HistoryTables.prototype, 'moments');
    try {
      // From before the first cached point: every run narrows the range to what the cache holds.
      const settings = { indexes: ['x', 'y'], from: T0 - 24 * H, to: T0 + 119 * H, allowGaps: true };
      const results = await runSweep({ db, settings, jobs: [50, 100, 150].map((notionalUsd) => ({ file, params: { notionalUsd } })), workers: 1 });
      expect(results.map((r) => r.settings.from)).toEqual([T0, T0, T0]);
      expect(reads).toHaveBeenCalledTimes(1);
    } finally {
      reads.mockRestore();
    }
  }, 60_000);

  it('takes in what every run logs, on this thread and on the workers, each line naming its run and params', async () => {
    const db = buildCache();
    const logging = new URL('../fixtures/backtest/logging-buyer.ts', import.meta.url).pathname;
    const jobs = [50, 100, 150, 200].map((notionalUsd) => ({ file: logging, params: { notionalUsd } }));
    const settings = { indexes: ['x', 'y'], from: T0, to: T0 + 119 * H };
    const logged = async (workers: number) => {
      const { logger, lines } = captureLogger();
      await runSweep({ db, settings, jobs, workers, logger });
      return lines.map((l) => JSON.parse(l) as { level: string; msg: string; run: number; params: { notionalUsd: number }; strategy: string; rebalance?: string });
    };
    const serial = await logged(1);
    const seen = serial.filter((l) => l.msg === 'announced seen');
    // The cache holds one announcement: one line per run, in every run.
    expect(seen.map((l) => [l.run, l.params.notionalUsd, l.strategy]).sort()).toEqual([
      [1, 50, 'logging-buyer'],
      [2, 100, 'logging-buyer'],
      [3, 150, 'logging-buyer'],
      [4, 200, 'logging-buyer'],
    ]);
    const parallel = await logged(2);
    const key = (l: (typeof serial)[number]) => `${l.run} ${l.level} ${l.msg}`;
    expect(parallel.map(key).sort()).toEqual(serial.map(key).sort());
    expect(new Set(parallel.filter((l) => l.msg === 'announced seen').map((l) => l.rebalance)).size).toBe(1);
  }, 180_000);

  it('an error in a run on this thread reaches the caller with its code', async () => {
    const db = buildCache();
    const e = await runSweep({
      db,
      settings: { indexes: ['nope'], from: T0, to: T0 + 10 * H },
      jobs: [
        { file, params: {} },
        { file, params: {} },
      ],
      workers: 2,
    }).catch((x: unknown) => x);
    expect((e as { code: string }).code).toBe('BACKTEST_NO_DATA');
    expect((e as Error).message).toContain('no cached 1h history for nope');
  }, 180_000);

  it('an error on a worker thread reaches the caller with its code and file', async () => {
    const db = buildCache();
    const slow = new URL('../fixtures/backtest/main-thread-only.ts', import.meta.url).pathname;
    const e = await runSweep({ db, settings: { indexes: ['x', 'y'], from: T0, to: T0 + 9 * H }, jobs: [0, 1, 2, 3].map((run) => ({ file: slow, params: { run } })), workers: 2 }).catch(
      (x: unknown) => x,
    );
    expect((e as { code: string }).code).toBe('STRATEGY_LOAD');
    expect((e as Error).message).toContain('main-thread-only.ts:11: failed to load: not on a worker thread');
  }, 180_000);

  it('with output.dir, writes each run’s report files where it ran as soon as it ends: a sweep that fails later keeps the runs it finished', async () => {
    const db = buildCache();
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-sweep-dir-'));
    const settings = { indexes: ['x', 'y'], from: T0, to: T0 + 119 * H };
    const jobs = [50, 100].map((notionalUsd) => ({ file, params: { notionalUsd } }));
    const summaries = await runSweep({ db, settings, jobs, workers: 2, output: { dir } });
    const files = await runSweep({ db, settings, jobs, workers: 1, output: 'report' });
    expect(summaries.map((r) => r.runId)).toEqual(files.map((f) => JSON.parse(f.json).runId));
    for (const [i, r] of summaries.entries()) {
      expect(readFileSync(join(dir, r.runId, 'report.json'), 'utf8')).toBe(files[i]!.json);
      expect(readFileSync(join(dir, r.runId, 'report.html'), 'utf8')).toBe(files[i]!.html);
      // What crosses back is the summary: no list of fills.
      expect(r.fills.count).toBeGreaterThan(0);
      expect('list' in r.fills).toBe(false);
    }
    const failing = mkdtempSync(join(tmpdir(), 'indexbot-sweep-dir-'));
    const e = await runSweep({ db, settings, jobs: [jobs[0]!, { file: join(failing, 'missing.ts'), params: {} }], workers: 1, output: { dir: failing } }).catch((x: unknown) => x);
    expect((e as { code: string }).code).toBe('STRATEGY_LOAD');
    expect(readdirSync(failing)).toEqual([summaries[0]!.runId]);
    expect(readFileSync(join(failing, summaries[0]!.runId, 'report.json'), 'utf8')).toBe(files[0]!.json);
  }, 180_000);

  it('runs a short sweep on this thread alone unless told otherwise: a worker would cost more than it takes on', async () => {
    const db = buildCache();
    const mainOnly = new URL('../fixtures/backtest/main-thread-only.ts', import.meta.url).pathname;
    // 4 runs of 2 indexes x 2 points: far fewer items than a thread is worth. The file fails to load on a worker.
    const results = await runSweep({ db, settings: { indexes: ['x', 'y'], from: T0, to: T0 + H }, jobs: [0, 1, 2, 3].map((run) => ({ file: mainOnly, params: { run } })) });
    expect(results.map((r) => r.strategy.params)).toEqual([{ run: 0 }, { run: 1 }, { run: 2 }, { run: 3 }]);
  }, 180_000);

  it('refuses a worker count out of range, naming it', async () => {
    await expect(runSweep({ db: buildCache(), settings: { indexes: ['x'], from: T0, to: T0 + H }, jobs: [{ file, params: {} }], workers: 0 })).rejects.toThrow(
      'Expected `workers` to be an integer from 1 to 64, got `0`',
    );
  });
});

describe('sweeps one after another, as a search runs them', () => {
  const threadLogger = new URL('../fixtures/backtest/thread-logger.ts', import.meta.url).pathname;
  const workerThreads = (lines: string[]) =>
    new Set(
      lines
        .map((l) => JSON.parse(l) as { msg: string; threadId?: number })
        .filter((l) => l.msg === 'ran on' && l.threadId !== 0)
        .map((l) => l.threadId),
    );

  it('read a range once for every call of the runner, and again for another range', async () => {
    const db = buildCache();
    const reads = vi.spyOn(HistoryTables.prototype, 'moments');
    const run = sweepRunner({ db, file, settings: { indexes: ['x', 'y'] }, workers: 1 });
    try {
      const trial = (notionalUsd: number, hours = 119) => ({ params: { notionalUsd }, from: T0, to: T0 + hours * H });
      const first = await run([trial(50), trial(100)]);
      await run([trial(150)]);
      expect(reads).toHaveBeenCalledTimes(1);
      // The same figures as a sweep that read the range itself.
      const fresh = await runSweep({ db, settings: { indexes: ['x', 'y'], from: T0, to: T0 + 119 * H }, jobs: [50, 100].map((notionalUsd) => ({ file, params: { notionalUsd } })), workers: 1 });
      expect(first.map((r) => r.metrics)).toEqual(fresh.map((r) => r.metrics));
      reads.mockClear();
      await run([trial(50, 100)]);
      expect(reads).toHaveBeenCalledTimes(1);
    } finally {
      reads.mockRestore();
      await run.close();
    }
  }, 120_000);

  it('load each strategy file once per thread for all their sweeps, whatever range each replays (walk-forward loaded it again for every window), and anew once it changed', async () => {
    const db = buildCache();
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-loads-'));
    const loads = join(dir, 'loads');
    writeFileSync(loads, '');
    // A copy to change, in the checkout: a strategy imports `indexbot` from a project that has it.
    const counts = new URL(`../fixtures/backtest/counts-loads-${basename(dir)}.ts`, import.meta.url).pathname;
    writeFileSync(counts, readFileSync(new URL('../fixtures/backtest/counts-loads.ts', import.meta.url), 'utf8'));
    const before = process.env.INDEXBOT_TEST_LOADS;
    process.env.INDEXBOT_TEST_LOADS = loads;
    const session = new SweepSession({ db, workers: 2 });
    const sweep = (from: number) =>
      session.run(
        { indexes: ['x', 'y'], from, to: from + 9 * H },
        [0, 1].map((run) => ({ file: counts, params: { run } })),
      );
    try {
      const [first] = await sweep(T0);
      await sweep(T0 + 10 * H);
      await sweep(T0 + 20 * H);
      // This thread and the worker, once each.
      expect(readFileSync(loads, 'utf8')).toBe('loaded\n'.repeat(2));
      // Changed: the next sweep runs the new code on both threads, as its reports' source hash says.
      writeFileSync(counts, `${readFileSync(counts, 'utf8')}\n// changed\n`);
      const [changed] = await sweep(T0 + 30 * H);
      expect(readFileSync(loads, 'utf8')).toBe('loaded\n'.repeat(4));
      expect(changed!.strategy.sourceHash).not.toBe(first!.strategy.sourceHash);
    } finally {
      await session.close();
      rmSync(counts, { force: true });
      if (before === undefined) delete process.env.INDEXBOT_TEST_LOADS;
      else process.env.INDEXBOT_TEST_LOADS = before;
    }
  }, 60_000);

  it('a session closed while the history is read fails that sweep, never leaving it waiting on its workers (the review)', async () => {
    const hours = 24_000;
    const db = buildCache({ hours });
    const session = new SweepSession({ db, workers: 2 });
    // Its outcome taken from the start: it fails while close() is awaited.
    const sweep = session
      .run(
        { indexes: ['x', 'y'], from: T0, to: T0 + (hours - 1) * H },
        [50, 100, 150].map((notionalUsd) => ({ file, params: { notionalUsd } })),
      )
      .then(
        () => 'resolved',
        (e: Error) => e.message,
      );
    await new Promise((resolve) => setImmediate(resolve));
    await session.close();
    const outcome = await Promise.race([sweep, new Promise((resolve) => setTimeout(() => resolve('still waiting'), 20_000))]);
    expect(outcome).toBe('the sweep was stopped before its runs finished');
  }, 60_000);

  it('keep their worker threads from one call to the next, and start new ones after a failure', async () => {
    const db = buildCache();
    const { logger, lines } = captureLogger();
    const run = sweepRunner({ db, file: threadLogger, settings: { indexes: ['x', 'y'] }, workers: 2, logger });
    // Each sweep's worker takes a job however long it takes to start: the main thread's runs hold until it has.
    const met = mkdtempSync(join(tmpdir(), 'indexbot-meet-'));
    const trials = (n: number, sweep: number) => Array.from({ length: n }, (_, i) => ({ params: { run: i, meet: join(met, String(sweep)) }, from: T0, to: T0 + 9 * H }));
    try {
      await run(trials(4, 1));
      const first = workerThreads(lines.splice(0));
      await run(trials(4, 2));
      const second = workerThreads(lines.splice(0));
      expect(first.size).toBe(1);
      expect(second).toEqual(first);
      // A file that fails on a worker fails that sweep; the session's next sweep runs on a new worker.
      const session = new SweepSession({ db, workers: 2, logger });
      try {
        const mainOnly = new URL('../fixtures/backtest/main-thread-only.ts', import.meta.url).pathname;
        const failed = await session
          .run(
            { indexes: ['x', 'y'], from: T0, to: T0 + 9 * H },
            [0, 1, 2, 3].map((r) => ({ file: mainOnly, params: { run: r } })),
          )
          .catch((e: unknown) => e);
        expect((failed as { code: string }).code).toBe('STRATEGY_LOAD');
        lines.splice(0);
        const results = await session.run(
          { indexes: ['x', 'y'], from: T0, to: T0 + 9 * H },
          [0, 1, 2, 3].map((r) => ({ file: threadLogger, params: { run: r, meet: join(met, '3') } })),
        );
        expect(results.map((r) => (r.strategy.params as { run: number }).run)).toEqual([0, 1, 2, 3]);
        const after = workerThreads(lines.splice(0));
        expect(after.size).toBe(1);
        expect([...after][0]).not.toBe([...first][0]);
      } finally {
        await session.close();
      }
    } finally {
      await run.close();
    }
  }, 180_000);

  it('a session closed during a sweep fails that sweep at once and runs none after', async () => {
    const db = buildCache();
    const { logger, lines } = captureLogger();
    const session = new SweepSession({ db, workers: 2, logger });
    const running = session.run(
      { indexes: ['x', 'y'], from: T0, to: T0 + 9 * H },
      [0, 1, 2, 3].map((run) => ({ file: threadLogger, params: { run, workerDelayMs: 500 } })),
    );
    const outcome = running.then(
      () => 'finished',
      (e: Error) => e.message,
    );
    // Closed once the worker is in a run.
    while (workerThreads(lines).size === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    await session.close();
    expect(await outcome).toBe('the sweep was stopped before its runs finished');
    await expect(session.run({ indexes: ['x', 'y'], from: T0, to: T0 + 9 * H }, [{ file: threadLogger, params: {} }])).rejects.toThrow('this SweepSession is closed');
  }, 60_000);

  it('lets a range go on every thread before it reads the next: a worker left idle holds no older one', async () => {
    const db = buildCache();
    // The connections to the cache open in this process, one per thread's read-only cache, counted
    // by their descriptors of its write-ahead log. Not by the database file's: SQLite keeps the
    // descriptor of a closed connection open while another connection of the process holds a
    // lock on the file (a close would drop that lock too), and in WAL mode the open one holds it.
    const openOnCache = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`) === `${db}-wal`;
        } catch {
          return false;
        }
      }).length;
    const session = new SweepSession({ db, workers: 2 });
    try {
      const slowOnMain = (run: number) => ({ file: threadLogger, params: { run } });
      // The worker takes a job however long it takes to start, and so opens the cache.
      const meet = join(mkdtempSync(join(tmpdir(), 'indexbot-meet-')), 'met');
      await session.run(
        { indexes: ['x', 'y'], from: T0, to: T0 + 9 * H },
        [0, 1, 2, 3].map((run) => ({ file: threadLogger, params: { run, meet } })),
      );
      const onFirst = openOnCache();
      // One job: this thread runs it; the idle worker was holding the first range.
      await session.run({ indexes: ['x', 'y'], from: T0 + H, to: T0 + 9 * H }, [slowOnMain(4)]);
      expect(onFirst).toBe(2);
      // A message to a worker is handled a moment later (longer on a busy machine); one that never comes leaves 2.
      for (const deadline = Date.now() + 10_000; openOnCache() !== 1 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(openOnCache()).toBe(1);
    } finally {
      await session.close();
    }
  }, 60_000);

  it('a session left open does not keep the process alive', () => {
    const db = buildCache();
    const script = new URL('../fixtures/backtest/unclosed-session.ts', import.meta.url).pathname;
    const hooks = new URL('../../scripts/register-source-imports.mjs', import.meta.url).pathname;
    const r = spawnSync(process.execPath, ['--import', hooks, script, db], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('4 runs');
  }, 90_000);
});

describe('a sweep history read in pieces (readPieces)', () => {
  const pieces: PieceRead[] = [0, 1, 2, 3, 4, 5].map((k) => ({ db: 'x', indexIds: ['x'], interval: '1h', from: k, to: k, budget: sharedBudget(1) }));
  const data = (k: number, by: string) => ({ ts: [k], by }) as unknown as RecordingData;
  const by = (read: unknown[]) => read.map((r) => (r as { by: string }).by);
  /** A worker that starts when `started` settles and answers each read as `answer` does. */
  const fakeWorker = (started: Promise<boolean>, answer: (p: PieceRead) => Promise<RecordingData>) => {
    const asked: number[] = [];
    return {
      asked,
      started,
      read: (p: PieceRead) => {
        asked.push(p.from);
        return answer(p);
      },
    };
  };
  const later = <T>(value: T, ms = 5) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

  it('reads every piece once, in order, here and on the workers that start in time', async () => {
    const w = fakeWorker(Promise.resolve(true), (p) => later(data(p.from, 'worker'), 30));
    const read = await readPieces(pieces, (p) => data(p.from, 'here'), [w]);
    expect(read.map((r) => (r as unknown as { ts: number[] }).ts[0])).toEqual([0, 1, 2, 3, 4, 5]);
    expect(by(read).filter((b) => b === 'worker')).toHaveLength(w.asked.length);
    expect(w.asked.length).toBeGreaterThan(0);
  });

  it('does not wait for a worker that never starts, or that died first', async () => {
    const never = fakeWorker(new Promise<boolean>(() => {}), () => Promise.reject(new Error('not asked')));
    const dead = fakeWorker(Promise.resolve(false), () => Promise.reject(new Error('not asked')));
    expect(by(await readPieces(pieces, (p) => data(p.from, 'here'), [never, dead]))).toEqual(Array(6).fill('here'));
    expect([...never.asked, ...dead.asked]).toEqual([]);
  });

  it('reads here a piece a worker failed, and gives that worker no more', async () => {
    const failing = fakeWorker(Promise.resolve(true), () => later(undefined, 5).then(() => Promise.reject(new Error('worker died'))));
    const read = await readPieces(pieces, (p) => data(p.from, 'here'), [failing]);
    expect(by(read)).toEqual(Array(6).fill('here'));
    expect(failing.asked).toHaveLength(1);
  });

  it('hands out no piece once one is over budget, nor after a read here failed, and waits for the reads in flight', async () => {
    const slow = fakeWorker(Promise.resolve(true), (p) => later(data(p.from, 'worker'), 50));
    const over = await readPieces(pieces, (p) => (p.from === 0 ? 'over budget' : data(p.from, 'here')), [slow]);
    expect(over[0]).toBe('over budget');
    expect(over.filter((r) => r !== undefined).length).toBeLessThan(6);
    let inFlight = 0;
    const counted = fakeWorker(Promise.resolve(true), (p) => {
      inFlight++;
      return later(data(p.from, 'worker'), 50).finally(() => inFlight--);
    });
    let calls = 0;
    const failed = await readPieces(
      pieces,
      (p) => {
        if (++calls === 2) throw new Error('disk error');
        return data(p.from, 'here');
      },
      [counted],
    ).catch((e: Error) => e.message);
    expect(failed).toBe('disk error');
    expect(inFlight).toBe(0);
    const asked = counted.asked.length;
    await later(undefined, 100);
    expect(counted.asked).toHaveLength(asked);
  });
});

describe('indexbot backtest sweep', () => {
  const CHROMIUM = '/usr/bin/chromium';

  it('without --out, names the folder for its runs once they are done, takes the place of the same sweep run before, and leaves nothing of a sweep that failed', () => {
    const db = buildCache();
    const cwd = mkdtempSync(join(tmpdir(), 'indexbot-sweep-cwd-'));
    writeFileSync(join(cwd, 'none.json'), '{}');
    const bin = new URL('../../bin/indexbot.js', import.meta.url).pathname;
    const sweep = (strategy: string, params = ['{}', '{"notionalUsd":150}'], extra: string[] = []) =>
      spawnSync(
        process.execPath,
        [bin, 'backtest', '--db', db, '--strategy', strategy, '--indexes', 'x,y', '--from', '2025-03-01', '--to', '2025-03-01T09:00:00Z', ...params.flatMap((p) => ['--params', p]), ...extra],
        { cwd, encoding: 'utf8', env: { ...process.env, INDEXBOT_CONFIG: join(cwd, 'none.json') } },
      );
    const listing = () => readdirSync(join(cwd, 'data', 'backtests')).sort();
    const first = sweep(file);
    expect(first.status).toBe(0);
    const [folder] = listing();
    expect(listing()).toEqual([expect.stringMatching(/^sweep_[0-9a-f]{12}$/)]);
    expect(first.stdout).toContain(`reports: ${join('data', 'backtests', folder!)}`);
    expect(readdirSync(join(cwd, 'data', 'backtests', folder!)).sort()).toEqual([expect.stringMatching(/^bt_/), expect.stringMatching(/^bt_/), 'sweep.html', 'sweep.json']);
    expect(sweep(file).status).toBe(0);
    expect(listing()).toEqual([folder]);
    // A run fails on the worker thread: the command fails, and no folder of half a sweep is left.
    const failed = sweep(new URL('../fixtures/backtest/main-thread-only.ts', import.meta.url).pathname, ['{"run":1}', '{"run":2}', '{"run":3}'], ['--workers', '2']);
    expect(failed.status).not.toBe(0);
    expect(failed.stderr).toContain('not on a worker thread');
    expect(listing()).toEqual([folder]);
  }, 180_000);

  it('says how many threads it runs on and what qualifies every run (a narrowed range), and leaves no --out it made when refused (trial 38)', () => {
    const db = buildCache();
    const cwd = mkdtempSync(join(tmpdir(), 'indexbot-sweep-cwd-'));
    writeFileSync(join(cwd, 'none.json'), '{}');
    const bin = new URL('../../bin/indexbot.js', import.meta.url).pathname;
    const backtest = (args: string[]) =>
      spawnSync(process.execPath, [bin, 'backtest', '--db', db, '--strategy', file, '--indexes', 'x,y', ...args], {
        cwd,
        encoding: 'utf8',
        env: { ...process.env, INDEXBOT_CONFIG: join(cwd, 'none.json') },
      });
    const twoRuns = ['--params', '{}', '--params', '{"notionalUsd":150}'];
    // Asked from a day before the first cached point: every run is narrowed alike, and the sweep says so once, in its table and on its page.
    const narrowed = backtest(['--from', '2025-02-28', '--to', '2025-03-05', '--allow-gaps', '--workers', '1', '--out', join(cwd, 'narrowed'), ...twoRuns]);
    expect(narrowed.status).toBe(0);
    expect(narrowed.stderr).toContain('sweep: 2 runs on 1 thread(s)');
    expect(narrowed.stdout).toContain('(!) the cache holds 2025-03-01T00:00 .. 2025-03-05T00:00 of the requested 2025-02-28T00:00 .. 2025-03-05T00:00');
    expect(readFileSync(join(cwd, 'narrowed', 'sweep.html'), 'utf8')).toContain('<p class="range-warning">(!) the cache holds 2025-03-01T00:00 .. 2025-03-05T00:00 of the requested');
    // Without --out, the sweep's folder is made as a run's is, not private as a temporary one.
    expect(backtest(['--from', '2025-03-01', '--to', '2025-03-02', ...twoRuns]).status).toBe(0);
    const [sweepDir] = readdirSync(join(cwd, 'data', 'backtests'));
    const mode = (path: string) => statSync(path).mode & 0o777;
    const run = readdirSync(join(cwd, 'data', 'backtests', sweepDir!)).find((d) => d.startsWith('bt_'))!;
    expect(mode(join(cwd, 'data', 'backtests', sweepDir!))).toBe(mode(join(cwd, 'data', 'backtests', sweepDir!, run)));
    // Refused for its range: no --out folder is left behind, nor the parents it made; one that was there stays.
    const refused = backtest(['--from', '2026-01-01', '--to', '2026-01-05', '--out', join(cwd, 'nothing', 'deeper', 'out'), ...twoRuns]);
    expect(refused.status).toBe(64);
    expect(refused.stderr).toContain('BACKTEST_NO_DATA');
    expect(existsSync(join(cwd, 'nothing'))).toBe(false);
    expect(backtest(['--from', '2026-01-01', '--to', '2026-01-05', '--out', join(cwd, 'narrowed'), ...twoRuns]).status).toBe(64);
    expect(existsSync(join(cwd, 'narrowed', 'sweep.json'))).toBe(true);
    // --workers on a single run is said to do nothing there.
    const single = backtest(['--from', '2025-03-01', '--to', '2025-03-02', '--workers', '2', '--out', join(cwd, 'single')]);
    expect(single.status).toBe(0);
    expect(single.stderr).toContain('--workers sets how many runs of a sweep go at once: a single run ignores it');
  }, 180_000);

  it('--workers 2 writes the same report.json files as --workers 1, with sweep.json and a sweep.html that sorts and draws', async () => {
    const db = buildCache();
    const out = mkdtempSync(join(tmpdir(), 'indexbot-sweep-'));
    writeFileSync(join(out, 'none.json'), '{}');
    const sweep = (workers: number) => {
      const r = spawnSync(
        process.execPath,
        [
          'bin/indexbot.js',
          'backtest',
          '--db',
          db,
          '--strategy',
          file,
          '--indexes',
          'x,y',
          '--from',
          '2025-03-01',
          '--to',
          '2025-03-05',
          '--params',
          '{"notionalUsd":50}',
          '--params',
          '{"notionalUsd":150}',
          '--params',
          '{"notionalUsd":100}',
          '--workers',
          String(workers),
          '--out',
          join(out, String(workers)),
        ],
        { encoding: 'utf8', env: { ...process.env, INDEXBOT_CONFIG: join(out, 'none.json') } },
      );
      expect(r.stderr).not.toContain('indexbot:');
      expect(r.status).toBe(0);
      // Four days: CAGR and Sharpe marked as a single run's table marks them (found by trial 22: the sweep said nothing).
      expect(r.stdout).toMatch(/ CAGR \(!\) +Sharpe \(!\) /);
      expect(r.stdout).toMatch(/\n\(!\) the window is \d+\.\d days, under 90: CAGR and Sharpe annualise it and say little\nreports: /);
      return readdirSync(join(out, String(workers))).sort();
    };
    const serial = sweep(1);
    expect(sweep(2)).toEqual(serial);
    const runs = serial.filter((d) => d.startsWith('bt_'));
    expect(runs).toHaveLength(3);
    for (const run of runs) expect(readFileSync(join(out, '2', run, 'report.json'), 'utf8')).toBe(readFileSync(join(out, '1', run, 'report.json'), 'utf8'));
    // The same comparison but for when each was written.
    const comparison = (workers: number) => ({ ...JSON.parse(readFileSync(join(out, String(workers), 'sweep.json'), 'utf8')), createdAt: undefined });
    expect(comparison(2)).toEqual(comparison(1));
    expect(comparison(1).swept).toEqual({ notionalUsd: [50, 150, 100] });
    const html = readFileSync(join(out, '2', 'sweep.html'), 'utf8');
    expect(html).not.toContain('<script src=');
    expect(html).toContain('<th data-col="3">CAGR (!)</th><th data-col="4">Sharpe (!)</th>');
    expect(html).toMatch(/<p class="range-warning">\(!\) the window is \d+\.\d days, under 90/);
    if (!existsSync(CHROMIUM)) return;
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
    try {
      const page = await browser.newPage({ timezoneId: 'Asia/Kolkata' });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      await page.goto(pathToFileURL(join(out, '2', 'sweep.html')).href);
      expect(await page.evaluate(utcAxisMismatches('window.indexbotSweepChart'))).toEqual([]);
      // One curve per run on the chart.
      expect(await page.evaluate(() => (globalThis as unknown as { indexbotSweepChart: { series: unknown[] } }).indexbotSweepChart.series.length)).toBe(1 + 3);
      const params = () => page.$$eval('#runs tbody tr td:nth-child(2)', (tds) => tds.map((td) => JSON.parse(td.textContent!).notionalUsd));
      expect(await params()).toEqual([50, 150, 100]);
      await page.click('#runs th:nth-child(2)');
      expect(await params()).toEqual([100, 150, 50]);
      await page.click('#runs th:nth-child(2)');
      expect(await params()).toEqual([50, 150, 100]);
      // A numeric column sorts by number.
      await page.click('#runs th:nth-child(7)');
      const trades = await page.$$eval('#runs tbody tr td:nth-child(7)', (tds) => tds.map((td) => Number(td.textContent)));
      expect(trades).toEqual([...trades].sort((a, b) => a - b));
      // A run's id leads to its own report.
      const [first] = await page.$$eval('#runs tbody tr td:first-child', (tds) => tds.map((td) => td.textContent));
      await Promise.all([page.waitForEvent('load'), page.click(`#runs a:text-is("${first}")`)]);
      expect(page.url()).toBe(pathToFileURL(join(out, '2', first!, 'report.html')).href);
      expect(await page.title()).toContain(first!);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 180_000);
});
