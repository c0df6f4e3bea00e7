import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildCache } from '../helpers/backtest-cache.ts';
import { runCli, writeConfig } from '../helpers/daemon.ts';
import { tempJsonFile } from '../helpers/temp-db.ts';

describe('research commands', () => {
  const db = buildCache();
  const env = { INDEXBOT_CONFIG: writeConfig(db, { db, strategies: { paper: { feeBps: 0, slippageBps: 0 } } }) };

  it('check-lookahead: FAIL with a table and exit 1 for a peeking strategy; PASS and exit 0 for an example', async () => {
    // Asked from ten days before the cache: --allow-gaps narrows the check to the cached range, and says that range.
    const peek = await runCli(['check-lookahead', '--strategy', 'test/fixtures/research/file-peeker.ts', '--from', '2025-02-19', '--allow-gaps'], env);
    expect(peek.stderr).toBe('');
    expect(peek.status).toBe(1);
    const lines = peek.stdout.trim().split('\n');
    expect(lines[0]).toBe('check-lookahead file-peeker 2025-03-01 00:00 .. 2025-03-05 23:00: 1 decision at 1 time; replayed on the cache cut at 1 of them');
    expect(lines[1]).toMatch(/^FAIL 2 decision\(s\) differ/);
    expect(lines[3]).toMatch(/^2025-03-02 06:00 +2025-03-02 06:00 +rebalance\.announced:x:rb_x_1 +buy +index:x +filled +[\d.]+ +cut only$/);
    const global = await runCli(['check-lookahead', '--strategy', 'test/fixtures/research/global-peeker.ts'], env);
    expect(global.status).toBe(1);
    expect(global.stdout).toContain('WARN the strategy created globals (__indexbotSeenNavs): they outlive a run and can carry the future into the next');
    // A module variable carried into the next run on the same module (as a sweep's): it passed, exit 0.
    const carrier = await runCli(['check-lookahead', '--strategy', 'test/fixtures/research/module-carrier.ts'], env);
    expect(carrier.status).toBe(1);
    expect(carrier.stdout).toContain('PASS no decision changed when the cache was cut at it');
    expect(carrier.stdout).toContain("FAIL 2 decision(s) differ when the whole range runs again on the same loaded module, as a sweep's runs do");
    // Handlers that failed: it said PASS and exited 0; now it fails as a backtest of them does, unless --allow-failures.
    const failing = ['check-lookahead', '--strategy', 'test/fixtures/backtest/fail-better.ts', '--indexes', 'x', '--params', '{"fail":true}'];
    const failed = await runCli(failing, env);
    expect(failed.status).toBe(1);
    // Not PASS while the command fails (trial 34): what the failed handlers would have decided is unchecked.
    expect(failed.stdout).toMatch(/^INCOMPLETE no decision changed when the cache was cut at it \(of what its handlers did: they failed on \d+ event\(s\), skipped\)$/m);
    expect(failed.stderr.trim().split('\n').at(-1)).toMatch(
      /^indexbot: the check: strategy handlers failed on \d+ event\(s\), which were skipped \(first: performance\.updated:x:.*broken on purpose, at test\/fixtures\/backtest\/fail-better\.ts:\d+:\d+; the check covers only what the other events led to\); fix the strategy, or pass --allow-failures to accept the figures \[BACKTEST_STRATEGY_FAILED\]$/,
    );
    // The first run's failures are logged (five, then one line); the replays on cut caches repeat them at debug only (a trial saw 118 lines).
    const logged = failed.stderr.split('\n').filter((l) => l.startsWith('{'));
    expect(logged.filter((l) => l.includes('strategy handler failed'))).toHaveLength(5);
    expect(logged.filter((l) => l.includes('further failed events are skipped and counted'))).toHaveLength(1);
    const allowed = await runCli([...failing, '--allow-failures'], env);
    expect(allowed.status).toBe(0);
    expect(allowed.stdout).toMatch(/^PASS no decision changed/m);
    const clean = await runCli(['check-lookahead', '--strategy', 'rebalance-front-run', '--json'], env);
    expect(clean.status).toBe(0);
    const r = JSON.parse(clean.stdout);
    expect(r).toMatchObject({ strategy: 'rebalance-front-run', differences: [], clockCalls: [], globals: [], carriedOver: [], failedEvents: 0 });
    expect(r.checked).toBeGreaterThan(0);
  }, 120_000);

  it('walk-forward and optimize never choose params whose handlers failed, and exit 1 saying so unless --allow-failures', async () => {
    const dir = dirname(db);
    const grid = tempJsonFile('fail-grid.json', { fail: [false, true] });
    const space = tempJsonFile('fail-space.json', { fail: { values: [false, true] } });
    const strategy = 'test/fixtures/backtest/fail-better.ts';
    const wf = ['walk-forward', '--strategy', strategy, '--indexes', 'x', '--grid', grid, '--train', '48h', '--test', '24h', '--metric', 'totalReturn', '--out', join(dir, 'wf-fail'), '--json'];
    const walked = await runCli(wf, env);
    expect(walked.status).toBe(1);
    const saved = JSON.parse(walked.stdout) as { windows: { params: { fail: boolean }; failedInTraining: number; failedInTest: number }[] };
    expect(saved.windows.map((w) => w.params.fail)).toEqual(saved.windows.map(() => false));
    // The candidates that failed were trained; the chosen ones, tested, did not fail.
    expect(saved.windows.map((w) => [w.failedInTraining > 0, w.failedInTest])).toEqual(saved.windows.map(() => [true, 0]));
    expect(walked.stderr.trim().split('\n').at(-1)).toMatch(
      /^indexbot: 2 of 2 windows: strategy handlers failed on \d+ event\(s\), which were skipped \(window 1; params that failed rank last; .*\); fix the strategy, or pass --allow-failures to accept the figures \[BACKTEST_STRATEGY_FAILED\]$/,
    );
    expect((await runCli([...wf, '--allow-failures'], env)).status).toBe(0);

    const opt = await runCli(['optimize', '--strategy', strategy, '--indexes', 'x', '--space', space, '--trials', '4', '--metric', 'totalReturn', '--out', join(dir, 'opt-fail'), '--json'], env);
    expect(opt.status).toBe(1);
    const trials = JSON.parse(opt.stdout) as { params: { fail: boolean }; score: number | null; failedEvents: number }[];
    expect(trials[0]!.params.fail).toBe(false);
    expect(trials.filter((t) => t.params.fail).every((t) => t.score === null && t.failedEvents > 0)).toBe(true);
    expect(opt.stderr.trim().split('\n').at(-1)).toMatch(
      /^indexbot: \d of 4 trials: strategy handlers failed on \d+ event\(s\), which were skipped \(trial \d with \{"fail":true\}; such trials rank last; .*\); fix the strategy, or pass --allow-failures to accept the figures \[BACKTEST_STRATEGY_FAILED\]$/,
    );
  });

  it('walk-forward: a table of windows with the chosen params, the stitched out-of-sample figures, and walk-forward.json', async () => {
    const grid = join(dirname(db), 'grid.json');
    writeFileSync(grid, JSON.stringify({ notionalUsd: [250, 50] }));
    const out = join(dirname(db), 'wf');
    const r = await runCli(
      [
        'walk-forward',
        '--strategy',
        'test/fixtures/backtest/announce-buyer.ts',
        '--indexes',
        'x',
        '--fee-bps',
        '10',
        '--grid',
        grid,
        '--train',
        '48h',
        '--test',
        '24h',
        '--metric',
        'totalReturn',
        // Before the first cached point (2025-03-01): the windows start where the history does.
        '--from',
        '2025-02-19',
        '--allow-gaps',
        '--out',
        out,
      ],
      env,
    );
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe('walk-forward announce-buyer: 2 windows (rolling), 2 candidates each, best by totalReturn');
    expect(lines[1]).toMatch(/^# +train +test +chosen params +totalReturn in +totalReturn out +test return$/);
    expect(lines[2]).toMatch(/^1 +2025-03-01 \.\. 2025-03-03 +2025-03-03 \.\. 2025-03-04 +\{"notionalUsd":50\} +-?[\d.]+% +/);
    expect(lines[3]).toMatch(/^2 +2025-03-02 \.\. 2025-03-04 +2025-03-04 \.\. 2025-03-05 /);
    expect(r.stdout).toMatch(/out-of-sample, stitched: return -?[\d.]+%, CAGR \(!\) -?[\d.]+%, Sharpe \(!\) /);
    expect(r.stdout).toMatch(/\n\(!\) the test windows stitched are [\d.]+ days, under 90: CAGR and Sharpe annualise it and say little\n/);
    const saved = JSON.parse(readFileSync(join(out, 'walk-forward.json'), 'utf8'));
    expect(saved.windows).toHaveLength(2);
    expect(saved.windows[0].params).toEqual({ notionalUsd: 50 });
    expect(saved.equity[0]).toEqual([Date.parse('2025-03-03T00:00:00Z'), 10_000, 0]);
    const page = readFileSync(join(out, 'walk-forward.html'), 'utf8');
    expect(page.match(/<table id="windows">.*?<\/table>/s)![0].match(/<tr>/g)).toHaveLength(3);
    expect(page).not.toMatch(/<script src=|<link /);
    expect(page).toContain('<p class="range-warning">(!) the test windows stitched are ');
    const bad = await runCli(['walk-forward', '--strategy', 'rebalance-front-run', '--grid', grid, '--train', '0d', '--test', '1d'], env);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toBe(`indexbot: option '--train <duration>' argument '0d' is invalid. expected a duration from 1h to 3650d, got "0d" [USAGE_INVALID]\n`);
    const short = await runCli(['walk-forward', '--strategy', 'rebalance-front-run', '--grid', grid, '--train', '30d', '--test', '10d'], env);
    // Windows longer than the range: the flags asked for it, as --step does (trial 28: 78 here, 64 there).
    expect(short.status).toBe(64);
    expect(short.stderr).toBe('indexbot: the range holds 4.96 d of history, less than --train 30 d + --test 10 d; backfill more or shorten the windows [USAGE_INVALID]\n');
  }, 120_000);
  it('optimize stopped by Ctrl-C while its strategy still loads says that nothing was kept, exit 75', async () => {
    const dir = dirname(db);
    const space = tempJsonFile('slow-space.json', { holdHours: [1, 96] });
    const strategy = new URL('../fixtures/backtest/slow-to-load.ts', import.meta.url).pathname;
    const args = ['optimize', '--strategy', strategy, '--indexes', 'x', '--space', space, '--trials', '5', '--out', join(dir, 'opt-slow')];
    const child = spawn(process.execPath, ['bin/indexbot.js', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let sent = false;
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (!sent && stderr.includes('slow-to-load: importing')) sent = child.kill('SIGINT');
    });
    const [status, signal] = await new Promise<[number | null, string | null]>((resolve) => child.on('close', (code, sig) => resolve([code, sig])));
    expect(signal).toBeNull();
    expect(status).toBe(75);
    expect(stderr.trim().split('\n').at(-1)).toBe('indexbot: optimize interrupted before its first trial; nothing was kept [INTERRUPTED]');
  }, 60_000);

  it('optimize stopped by Ctrl-C says how many trials the study kept and how to go on, exit 75; the same command goes on from there', async () => {
    const dir = dirname(db);
    const space = tempJsonFile('interrupt-space.json', { holdHours: [1, 96] });
    const out = join(dir, 'opt-interrupted');
    const args = ['optimize', '--strategy', 'rebalance-front-run', '--indexes', 'x', '--space', space, '--metric', 'totalReturn', '--out', out];
    const child = spawn(process.execPath, ['bin/indexbot.js', ...args, '--trials', '5000'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let sent = false;
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (!sent && stderr.includes('optimize: 3 of 5000 trials done')) sent = child.kill('SIGINT');
    });
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(status).toBe(75);
    const kept = readFileSync(join(out, 'trials.jsonl'), 'utf8').trim().split('\n').length;
    expect(kept).toBeGreaterThanOrEqual(3);
    expect(stderr.trim().split('\n').at(-1)).toBe(
      `indexbot: optimize interrupted: ${kept} of 5000 trials kept in ${join(out, 'trials.jsonl')}; run the same command again to go on from there [INTERRUPTED]`,
    );
    const again = await runCli([...args, '--trials', String(kept + 1)], env);
    expect(again.status).toBe(0);
    expect(again.stdout).toContain(`${kept + 1} trials (1 run now, ${kept} from the study)`);
    // Asked for fewer than the study holds: every kept trial is ranked, and the line says why there are more.
    const fewer = await runCli([...args, '--trials', '2'], env);
    expect(fewer.status).toBe(0);
    expect(fewer.stdout).toContain(`${kept + 1} trials (0 run now, ${kept + 1} from the study, which held more than --trials 2: all are ranked)`);
  }, 120_000);

  it('a range of one point, or a window shorter than one interval, is refused in one line instead of a run of zero length (trial 34)', async () => {
    const one = await runCli(['backtest', '--strategy', 'rebalance-front-run', '--indexes', 'x', '--from', '2025-03-01T00:00:00Z', '--to', '2025-03-01T00:30:00Z'], env);
    expect(one.status).toBe(64);
    expect(one.stderr.trim().split('\n').at(-1)).toBe('indexbot: the cache holds one 1h point in that range (2025-03-01T00:00): a backtest needs two or more; widen the range [BACKTEST_NO_DATA]');
    const grid = tempJsonFile('short-window-grid.json', { holdHours: [6, 12] });
    const wf = await runCli(['walk-forward', '--strategy', 'rebalance-front-run', '--grid', grid, '--interval', '1d', '--train', '2d', '--test', '12h'], env);
    expect(wf.status).toBe(64);
    expect(wf.stderr.trim().split('\n').at(-1)).toBe('indexbot: --test 12h is shorter than one 1d interval: lengthen it, or use a shorter --interval [USAGE_INVALID]');
  });

  it('a sweep or a walk-forward stopped by Ctrl-C says what it kept, exit 75, and leaves no hidden or empty folder (trial 34: exit 130 without a word)', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'indexbot-interrupt-'));
    const strategy = new URL('../fixtures/backtest/slow-runs.ts', import.meta.url).pathname;
    const bin = new URL('../../bin/indexbot.js', import.meta.url).pathname;
    const stopped = async (args: string[], ready: () => boolean) => {
      const child = spawn(process.execPath, [bin, ...args, '--strategy', strategy, '--indexes', 'x'], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
      // One Ctrl-C: a second would end the process by the signal, as a user's second one does.
      const poll = setInterval(() => {
        if (!ready()) return;
        clearInterval(poll);
        child.kill('SIGINT');
      }, 50);
      const status = await closed.finally(() => clearInterval(poll));
      return { status, last: stderr.trim().split('\n').at(-1) };
    };
    const backtests = join(cwd, 'data', 'backtests');
    const finishedRuns = (dir: string) => existsSync(dir) && readdirSync(dir).some((run) => run.startsWith('bt_') && !run.endsWith('.partial'));
    const hiddenFinished = () =>
      existsSync(backtests) &&
      readdirSync(backtests)
        .filter((d) => d.startsWith('.sweep-'))
        .some((d) => finishedRuns(join(backtests, d)));
    const grid = tempJsonFile('slow-grid.json', { run: [1, 2, 3, 4, 5, 6] });
    // Two threads, each writing its runs' reports: stopped, no run folder is left half made.
    const sweep = await stopped(['backtest', '--grid', grid, '--workers', '2'], hiddenFinished);
    expect(sweep.status).toBe(75);
    const m =
      /^indexbot: backtest interrupted: (\d) of 6 runs kept in (data\/backtests\/sweep_interrupted-\w+) \(each run's report\.json and report\.html\); the same command runs them all again \[INTERRUPTED\]$/.exec(
        sweep.last ?? '',
      );
    expect(m, sweep.last).not.toBeNull();
    const kept = readdirSync(join(cwd, m![2]!));
    expect(kept).toHaveLength(Number(m![1]));
    for (const run of kept) for (const file of ['report.json', 'report.html']) expect(existsSync(join(cwd, m![2]!, run, file)), `${run}/${file}`).toBe(true);
    expect(readdirSync(backtests).filter((d) => d.startsWith('.sweep-'))).toEqual([]);
    // Into an --out that holds the user's own folders: they stay, whatever they hold (the review: a folder without report.html was removed).
    const out = join(cwd, 'results');
    mkdirSync(join(out, 'notes'), { recursive: true });
    writeFileSync(join(out, 'notes', 'ideas.txt'), 'keep me');
    const intoOut = await stopped(['backtest', '--grid', grid, '--workers', '2', '--out', out], () => finishedRuns(out));
    expect(intoOut.status).toBe(75);
    expect(intoOut.last).toMatch(new RegExp(`^indexbot: backtest interrupted: \\d of 6 runs kept in ${out.replaceAll('.', '\\.')} `));
    expect(readFileSync(join(out, 'notes', 'ideas.txt'), 'utf8')).toBe('keep me');
    expect(readdirSync(out).filter((d) => d.endsWith('.partial'))).toEqual([]);
    // Walk-forward writes at the end: nothing kept, and its folder not left empty.
    const started = Date.now();
    const wf = await stopped(['walk-forward', '--grid', grid, '--train', '2d', '--test', '1d', '--params', '{"delayMs":30}'], () => Date.now() - started > 3_000);
    expect(wf.status).toBe(75);
    expect(wf.last).toMatch(/^indexbot: walk-forward interrupted after \d of \d windows; nothing was kept \(its results are written at the end\): the same command runs it again \[INTERRUPTED\]$/);
    expect(readdirSync(join(cwd, 'data', 'walk-forward'))).toEqual([]);
  }, 90_000);

  it("optimize, walk-forward and check-lookahead count the runs' info lines instead of writing them, and say so; --log-level debug writes them", async () => {
    const dir = dirname(db);
    const space = tempJsonFile('logging-space.json', { notionalUsd: [50, 500] });
    const grid = tempJsonFile('logging-grid.json', { notionalUsd: [50, 500] });
    const strategy = 'test/fixtures/backtest/logging-buyer.ts';
    const jsonLines = (stderr: string) =>
      stderr
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { msg: string; lines?: number });
    const opt = ['optimize', '--strategy', strategy, '--indexes', 'x', '--space', space, '--trials', '3', '--metric', 'totalReturn'];
    const quiet = await runCli([...opt, '--out', join(dir, 'opt-logging')], { ...env, INDEXBOT_LOG_FORMAT: 'json' });
    expect(quiet.status).toBe(0);
    const lines = jsonLines(quiet.stderr);
    expect(lines.filter((l) => l.msg === 'announced seen')).toEqual([]);
    const note = lines.find((l) => l.msg.startsWith('optimize: the runs logged'))!;
    expect(note.msg).toBe(`optimize: the runs logged ${note.lines} info lines, not shown; --log-level debug shows them`);
    const loud = await runCli([...opt, '--out', join(dir, 'opt-logging-debug'), '--log-level', 'debug'], { ...env, INDEXBOT_LOG_FORMAT: 'json' });
    expect(loud.status).toBe(0);
    // Every line counted is the one written at debug: one per announcement seen, in each trial.
    expect(jsonLines(loud.stderr).filter((l) => l.msg === 'announced seen').length).toBe(note.lines);
    expect(note.lines).toBeGreaterThanOrEqual(3);
    expect(jsonLines(loud.stderr).some((l) => l.msg.startsWith('optimize: the runs logged'))).toBe(false);

    const wf = ['walk-forward', '--strategy', strategy, '--indexes', 'x', '--grid', grid, '--train', '48h', '--test', '24h', '--metric', 'totalReturn', '--out', join(dir, 'wf-logging')];
    const walked = await runCli(wf, { ...env, INDEXBOT_LOG_FORMAT: 'json' });
    expect(walked.status).toBe(0);
    expect(jsonLines(walked.stderr).filter((l) => l.msg === 'announced seen')).toEqual([]);
    expect(jsonLines(walked.stderr).map((l) => l.msg)).toContainEqual(expect.stringMatching(/^walk-forward: the runs logged \d+ info lines, not shown; --log-level debug shows them$/));

    // check-lookahead replays the range once per decision checked: a trial saw 837 lines of a strategy's for --max-checks 10.
    const checked = await runCli(['check-lookahead', '--strategy', strategy, '--indexes', 'x'], { ...env, INDEXBOT_LOG_FORMAT: 'json' });
    expect(checked.status).toBe(0);
    expect(jsonLines(checked.stderr).filter((l) => l.msg === 'announced seen')).toEqual([]);
    expect(jsonLines(checked.stderr).map((l) => l.msg)).toContainEqual(expect.stringMatching(/^check-lookahead: the runs logged \d+ info lines, not shown; --log-level debug shows them$/));
  }, 120_000);
});
