import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { StrategyMetrics } from '../../src/backtest/index.ts';
import { ConfigError } from '../../src/core/index.ts';
import { type Dimension, type TrialRunner, decode, encode, optimize, parzen, readSpace, readTrials, sweepRunner, tpePropose, trialRandom } from '../../src/research/index.ts';
import { defineStrategy } from '../../src/strategy/index.ts';
import { buildCache } from '../helpers/backtest-cache.ts';
import { runCli, waitFor, writeConfig } from '../helpers/daemon.ts';
import { tempJsonFile } from '../helpers/temp-db.ts';

const strategy = defineStrategy({
  name: 'spaced',
  params: z.object({ hours: z.number().int().min(1).max(100).default(24), ratio: z.number().min(0).max(1).default(0.5), mode: z.enum(['a', 'b']).default('a') }),
  on: {},
});
const spaceFile = (space: unknown) => tempJsonFile('space.json', space);

describe('search space', () => {
  it('reads ranges and choices over the params schema: whole numbers where it says integer', () => {
    const dims = readSpace(spaceFile({ hours: [2, 48], ratio: { min: 0.01, max: 0.5, log: true }, mode: { values: ['a', 'b'] } }), strategy);
    expect(dims).toEqual([
      { key: 'hours', kind: 'range', min: 2, max: 48, int: true, log: false },
      { key: 'ratio', kind: 'range', min: 0.01, max: 0.5, int: false, log: true },
      { key: 'mode', kind: 'choice', values: ['a', 'b'] },
    ]);
  });

  it('refuses, naming the file and the key, an unknown param, a range outside the schema, an empty or reversed range', () => {
    const bad = (space: unknown) => () => readSpace(spaceFile(space), strategy);
    expect(bad({ hour: [1, 2] })).toThrow(/space\.json: hour: not a param of spaced \(its params: hours, ratio, mode\)$/);
    expect(bad({ ratio: [0, 2] })).toThrow(/ratio: 0 \.\. 2 is outside what spaced accepts \(0 \.\. 1\)$/);
    expect(bad({ hours: [5, 5] })).toThrow(/hours: expected min < max, got 5 \.\. 5$/);
    expect(bad({ ratio: { min: 0, max: 1, log: true } })).toThrow(/a log range needs min > 0/);
    expect(bad({ hours: 'x' })).toThrow(ConfigError);
    // A whole-number param with a fractional bound was sampled at that bound, and failed its trial mid-search.
    expect(bad({ hours: [1.5, 3] })).toThrow(/space\.json: hours: a range of whole numbers needs whole-number bounds, got 1\.5 \.\. 3$/);
    expect(bad({ ratio: { min: 0.5, max: 1, int: true } })).toThrow(/ratio: a range of whole numbers needs whole-number bounds, got 0\.5 \.\. 1$/);
    // Each choice passes the param's schema before any trial runs, and the error names the space file.
    expect(bad({ mode: { values: ['a', 'c'] } })).toThrow(/space\.json: mode: value "c" is not a value spaced accepts: /);
    expect(bad({ hours: { values: ['6'] } })).toThrow(/space\.json: hours: value "6" is not a value spaced accepts: .*expected number/);
    // A choice listed twice was sampled twice as often; "int": false on a whole-number param was sampled as whole numbers all the same.
    expect(bad({ mode: { values: ['a', 'b', 'a'] } })).toThrow(/space\.json: mode: value "a" is listed twice$/);
    expect(bad({ hours: { min: 1, max: 5, int: false } })).toThrow(/space\.json: hours: spaced takes whole numbers here, so "int": false cannot hold; drop it$/);
    expect(readSpace(spaceFile({ ratio: { min: 0, max: 1, int: false } }), strategy)).toEqual([{ key: 'ratio', kind: 'range', min: 0, max: 1, int: false, log: false }]);
    const nested = defineStrategy({ name: 'nested', params: z.object({ limits: z.object({ a: z.number() }).default({ a: 1 }) }), on: {} });
    expect(() => readSpace(spaceFile({ limits: { values: [{ a: 2 }, { a: 'x' }] } }), nested)).toThrow(/limits: value \{"a":"x"\} is not a value nested accepts: a: .*expected number/);
  });

  it('says what the schema accepts as it reads: an exclusive bound as one, the integer limits of zod not at all', () => {
    const positive = defineStrategy({ name: 'positive', params: z.object({ n: z.number().int().positive().default(1), x: z.number().gt(0).lte(2).default(1) }), on: {} });
    const bad = (space: unknown) => () => readSpace(spaceFile(space), positive);
    expect(bad({ n: [0, 5] })).toThrow(/n: 0 \.\. 5 is outside what positive accepts \(> 0\)$/);
    expect(bad({ x: [0, 1] })).toThrow(/x: 0 \.\. 1 is outside what positive accepts \(> 0 and <= 2\)$/);
    // Past the safe integers, the limit passed is named.
    expect(bad({ n: [1, 2 ** 53] })).toThrow(/n: 1 \.\. 9007199254740992 is outside what positive accepts \(> 0 and <= 9007199254740991\)$/);
    expect(readSpace(spaceFile({ n: [1, 5], x: [0.5, 2] }), positive).map((d) => d.key)).toEqual(['n', 'x']);
  });

  it('maps the unit interval onto values: equal slices per whole number, log ranges by their log', () => {
    const hours: Dimension = { key: 'h', kind: 'range', min: 1, max: 4, int: true, log: false };
    expect([0, 0.24, 0.26, 0.74, 0.76, 1].map((u) => decode(hours, u))).toEqual([1, 1, 2, 3, 4, 4]);
    for (const v of [1, 2, 3, 4]) expect(decode(hours, encode(hours, v))).toBe(v);
    const ratio: Dimension = { key: 'r', kind: 'range', min: 0.01, max: 1, int: false, log: true };
    expect(decode(ratio, 0.5)).toBeCloseTo(0.1, 12);
    expect(encode(ratio, 0.1)).toBeCloseTo(0.5, 12);
    const mode: Dimension = { key: 'm', kind: 'choice', values: ['a', 'b', 'c'] };
    expect([0, 0.34, 0.99, 1].map((u) => decode(mode, u))).toEqual(['a', 'b', 'c', 'c']);
  });
});

describe('TPE', () => {
  it('a Parzen estimator is a density on [0, 1]: it integrates to 1 and peaks at its values', () => {
    const p = parzen([0.2, 0.25, 0.9]);
    let area = 0;
    for (let i = 0; i < 10_000; i++) area += p.density((i + 0.5) / 10_000) / 10_000;
    expect(area).toBeCloseTo(1, 3);
    expect(p.density(0.22)).toBeGreaterThan(p.density(0.6));
    // hyperopt's widths: the larger gap to a neighbour (or the interval's end).
    expect(p.sigmas).toEqual([0.2, expect.closeTo(0.65, 12), expect.closeTo(0.65, 12)]);
  });

  it('finds the top of a hill faster than random search, and prefers the better choice', () => {
    const f = (u: number[]) => -((u[0]! - 0.8) ** 2) + (u[1]! < 0.5 ? 0 : 0.1);
    const run = (sampler: 'tpe' | 'random') => {
      const obs: { u: number[]; score: number }[] = [];
      for (let n = 0; n < 60; n++) {
        const r = trialRandom(7, n);
        const u = sampler === 'tpe' && n >= 10 ? tpePropose(obs, [0, 2], r) : [r(), r()];
        obs.push({ u, score: f(u) });
      }
      return obs.slice(30);
    };
    const tpe = run('tpe');
    const random = run('random');
    const distance = (o: { u: number[] }[]) => o.reduce((a, x) => a + Math.abs(x.u[0]! - 0.8), 0) / o.length;
    expect(distance(tpe)).toBeLessThan(distance(random) / 2);
    expect(tpe.filter((x) => x.u[1]! >= 0.5).length).toBeGreaterThan(25);
  });
});

describe('optimize', () => {
  const space = readSpace(spaceFile({ hours: [1, 100], ratio: [0, 1], mode: { values: ['a', 'b'] } }), strategy);
  // A made-up figure with its top at hours 70, ratio 0.3, mode b: the search logic alone, no replay.
  const runner: TrialRunner = async (trials) =>
    trials.map((t) => {
      const p = t.params as { hours: number; ratio: number; mode: string };
      const sharpe = -(((p.hours - 70) / 100) ** 2) - (p.ratio - 0.3) ** 2 + (p.mode === 'b' ? 0.05 : 0);
      return { runId: `r${p.hours}`, params: p, metrics: { sharpe, totalReturn: sharpe, trades: 1 } as StrategyMetrics, equity: [], failedEvents: 0 };
    });
  const study = (dir: string, trials: number, seed = 1, sampler: 'tpe' | 'random' = 'tpe') =>
    optimize({ dir, identity: { seed, sampler }, space, base: {}, trials, metric: 'sharpe', sampler, seed, startup: 5, run: runner, from: 0, to: 1 });
  const tmp = () => mkdtempSync(join(tmpdir(), 'indexbot-opt-'));

  it('gives the same trials for the same seed, other trials for another', async () => {
    const a = await study(tmp(), 15);
    const b = await study(tmp(), 15);
    expect(b.map((t) => t.params)).toEqual(a.map((t) => t.params));
    expect(a.every((t) => Number.isInteger(t.params.hours))).toBe(true);
    const c = await study(tmp(), 15, 2);
    expect(c.map((t) => t.params)).not.toEqual(a.map((t) => t.params));
  });

  it('resumes from the trials on disk, a partly written last line dropped, and proposes what an uninterrupted search would', async () => {
    const whole = await study(tmp(), 12);
    const dir = tmp();
    await study(dir, 7);
    appendFileSync(join(dir, 'trials.jsonl'), '{"n":7,"params":{"hou');
    const resumed = await study(dir, 12);
    expect(resumed.map((t) => t.params)).toEqual(whole.map((t) => t.params));
    expect(readTrials(dir).map((t) => t.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    // The refusal names what differs, with both values (a trial could not tell which flag it had changed).
    await expect(optimize({ dir, identity: { seed: 9, sampler: 'tpe' }, space, base: {}, trials: 3, metric: 'sharpe', sampler: 'tpe', seed: 9, run: runner, from: 0, to: 1 })).rejects.toThrow(
      `${dir} holds another search (seed was 1, now 9); give another --out, or this one's settings to resume it`,
    );
    await expect(optimize({ dir, identity: { seed: 1, range: { from: 5 } }, space, base: {}, trials: 3, metric: 'sharpe', sampler: 'tpe', seed: 1, run: runner, from: 0, to: 1 })).rejects.toThrow(
      '(sampler was "tpe", now undefined; range was undefined, now {"from":5})',
    );
  });

  it('in batches on worker threads: the same trials with one worker or two, and a resume inside a batch', async () => {
    const db = buildCache();
    const file = new URL('../../strategies/rebalance-front-run.ts', import.meta.url).pathname;
    const frontRun = (await import(file)).default;
    const dims = readSpace(spaceFile({ holdHours: [1, 48], maxTokens: [1, 3] }), frontRun);
    const settings = { indexes: ['x'], from: 0, to: 0 };
    const search = (dir: string, workers: number, trials: number) =>
      optimize({
        dir,
        identity: { batch: 3 },
        space: dims,
        base: {},
        trials,
        metric: 'totalReturn',
        sampler: 'tpe',
        seed: 3,
        startup: 3,
        batch: 3,
        run: sweepRunner({ db, file, settings, workers }),
        from: Date.UTC(2025, 2, 1),
        to: Date.UTC(2025, 2, 5, 23),
      });
    const one = await search(tmp(), 1, 8);
    const dir = tmp();
    await search(dir, 2, 4);
    const two = await search(dir, 2, 8);
    expect(two.map((t) => [t.params, t.score, t.runId])).toEqual(one.map((t) => [t.params, t.score, t.runId]));
  }, 120_000);

  it('CLI: a search killed with SIGKILL resumes to the same trials as one never stopped', async () => {
    const db = buildCache();
    const env = { INDEXBOT_CONFIG: writeConfig(db, { db }) };
    const file = spaceFile({ holdHours: [1, 48], minIncrease: { min: 0.001, max: 0.2, log: true }, notionalUsd: { values: [100, 500] } });
    const args = (out: string) => ['optimize', '--strategy', 'rebalance-front-run', '--space', file, '--trials', '8', '--startup', '3', '--metric', 'totalReturn', '--seed', '5', '--out', out];
    const whole = join(tmp(), 'study');
    const full = await runCli(args(whole), env);
    expect(full.status).toBe(0);
    expect(full.stdout.split('\n')[0]).toBe('optimize rebalance-front-run by totalReturn (tpe, seed 5): 8 trials (8 run now, 0 from the study)');
    expect(full.stdout).toMatch(/\nrank +trial +holdHours +minIncrease +notionalUsd +score \(totalReturn\) +return +Sharpe +max DD +fills\n1 /);

    const killed = join(tmp(), 'study');
    const child = spawn(process.execPath, ['bin/indexbot.js', ...args(killed)], { env: { ...process.env, ...env }, stdio: 'ignore' });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    await waitFor('three trials written', () => existsSync(join(killed, 'trials.jsonl')) && readTrials(killed).length >= 3, 60_000, 20);
    child.kill('SIGKILL');
    await exited;
    const before = readTrials(killed).length;
    expect(before).toBeLessThan(8);
    const again = await runCli(args(killed), env);
    expect(again.status).toBe(0);
    expect(again.stdout.split('\n')[0]).toContain(`8 trials (${8 - before} run now, ${before} from the study)`);
    expect(readTrials(killed).map((t) => [t.n, t.params, t.score])).toEqual(readTrials(whole).map((t) => [t.n, t.params, t.score]));
    expect(readFileSync(join(killed, 'optimize.html'), 'utf8')).toContain('<table id="best">');
  }, 180_000);
});
