import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_GRID_SETS, gridCombinations } from '../../src/cli/backtest-command.ts';
import { listOption } from '../../src/cli/options.ts';
import { tempJsonFile } from '../helpers/temp-db.ts';

const gridFile = (grid: unknown) => tempJsonFile('grid.json', grid);

describe('a --grid file', () => {
  it('gives one set of params per combination, in the file’s order', () => {
    expect(gridCombinations(gridFile({ a: [1, 2], b: ['x', null] }))).toEqual([
      { a: 1, b: 'x' },
      { a: 1, b: null },
      { a: 2, b: 'x' },
      { a: 2, b: null },
    ]);
  });

  it('is refused, naming the file and the key, when it names no param or lists a value twice (the same run twice, in one folder)', () => {
    const empty = gridFile({});
    expect(() => gridCombinations(empty)).toThrow(`${empty}: names no param; expected an object of parameter name to list of values, e.g. {"holdHours": [6, 12]}`);
    const twice = gridFile({ a: [1, 2], lookbackHours: [24, 48, 24] });
    expect(() => gridCombinations(twice)).toThrow(`${twice}: lookbackHours: lists 24 more than once`);
    expect(() => gridCombinations(gridFile({ on: [false, true, false] }))).toThrow('on: lists false more than once');
  });
});

describe('a grid too large to run', () => {
  it('is refused at once, naming the file and the count, before a combination is made (trial 34: a million printed nothing for minutes)', () => {
    const values = Array.from({ length: 1000 }, (_, i) => i);
    const huge = gridFile({ a: values, b: values });
    expect(() => gridCombinations(huge)).toThrow(`${huge}: 1000000 combinations, over ${MAX_GRID_SETS}: narrow the lists, or search the space with \`indexbot optimize\``);
    expect(gridCombinations(gridFile({ a: values, b: values.slice(0, 100) }))).toHaveLength(MAX_GRID_SETS);
  });
});

describe('a set of params the strategy refuses', () => {
  const refused = (args: string[]) => spawnSync(process.execPath, ['bin/indexbot.js', ...args, '--strategy', 'rebalance-front-run'], { encoding: 'utf8' });

  it('names the grid file and the set, for backtest and walk-forward, before anything runs', () => {
    const grid = gridFile({ holdHours: [6, -1] });
    for (const command of [['backtest'], ['walk-forward', '--train', '30d', '--test', '7d']]) {
      const r = refused([...command, '--grid', grid]);
      expect(r.status).toBe(78);
      expect(r.stderr).toMatch(
        new RegExp(
          `^indexbot: --grid ${grid.replaceAll('.', '\\.')}, set 2 of 2 \\{"holdHours":-1\\}: \\S+rebalance-front-run\\.ts: params of "rebalance-front-run" are invalid: holdHours: [^\\n]+ \\[STRATEGY_PARAMS\\]\\n$`,
        ),
      );
    }
  });

  it('names every layer that gave params, a grid set over --params: the refused key may be in either', () => {
    const grid = gridFile({ holdHours: [6, 12] });
    const r = refused(['walk-forward', '--train', '30d', '--test', '7d', '--grid', grid, '--params', '{"maxTokens":0.5}']);
    // The key at fault is the flag's: a bad flag (exit 64) whatever other layers gave.
    expect(r.status).toBe(64);
    expect(r.stderr).toContain(`indexbot: --grid ${grid}, set 1 of 2 {"holdHours":6} over --params {"maxTokens":0.5}: `);
    const sweep = refused(['backtest', '--grid', grid, '--params', '{"maxTokens":0.5}', '--params', '{"maxTokens":2}']);
    expect(sweep.status).toBe(64);
    expect(sweep.stderr).toContain(`indexbot: --grid ${grid}, set 1 of 2 {"holdHours":6} over --params set 1 of 2 {"maxTokens":0.5}: `);
  });

  it('refuses a param that --params fixes and the grid or the space varies, for backtest, walk-forward and optimize (found by trial 25: the flag was ignored)', () => {
    const grid = gridFile({ holdHours: [6, 12], maxTokens: [1, 2] });
    for (const command of [['backtest'], ['walk-forward', '--train', '30d', '--test', '7d']]) {
      const r = refused([...command, '--grid', grid, '--params', '{"holdHours":24}', '--params', '{"holdHours":48,"maxTokens":3}']);
      expect(r.stderr).toBe(`indexbot: --params sets holdHours, maxTokens, which --grid ${grid} also varies: give each in one of them [USAGE_INVALID]\n`);
      expect(r.status).toBe(64);
    }
    const space = gridFile({ holdHours: [1, 96] });
    const r = refused(['optimize', '--space', space, '--trials', '3', '--params', '{"holdHours":24}']);
    expect(r.stderr).toBe(`indexbot: --params sets holdHours, which --space ${space} also varies: give it in one of them [USAGE_INVALID]\n`);
    expect(r.status).toBe(64);
  });

  it('tells the layer of the key at fault: a --params value over a good config value is a bad flag (64), a bad config value under a good --params a bad file (78) (found by a trial)', () => {
    const withConfig = (params: object, args: string[]) =>
      spawnSync(process.execPath, ['bin/indexbot.js', 'backtest', '--strategy', 'rebalance-front-run', ...args], {
        encoding: 'utf8',
        env: { ...process.env, INDEXBOT_CONFIG: tempJsonFile('indexbot.json', { strategies: { params: { 'rebalance-front-run': params } } }) },
      });
    const flag = withConfig({ holdHours: 6 }, ['--params', '{"holdHours":-3}']);
    expect(flag.stderr).toMatch(/^indexbot: --params \{"holdHours":-3\} over the config's strategies\.params \{"holdHours":6\}: .* \[USAGE_INVALID\]\n$/);
    expect(flag.status).toBe(64);
    const file = withConfig({ holdHours: -1 }, ['--params', '{"maxTokens":2}']);
    expect(file.stderr).toMatch(/^indexbot: --params \{"maxTokens":2\} over the config's strategies\.params \{"holdHours":-1\}: .* \[STRATEGY_PARAMS\]\n$/);
    expect(file.status).toBe(78);
  });

  it('optimize names --params too, before any trial', () => {
    const space = gridFile({ holdHours: [1, 96] });
    const r = refused(['optimize', '--space', space, '--trials', '3', '--params', '{"maxTokens":0.5}']);
    // Given by a flag alone: a bad flag, as bad JSON there is (it exited 78, a config fault).
    expect(r.status).toBe(64);
    expect(r.stderr).toMatch(/^indexbot: --params \{"maxTokens":0\.5\}: \S+: params of "rebalance-front-run" are invalid: maxTokens: [^\n]+ \[USAGE_INVALID\]\n$/);
  });

  it('names --params and the set it gave', () => {
    const r = refused(['backtest', '--params', '{"holdHours":6}', '--params', '{"maxTokens":0.5}']);
    expect(r.status).toBe(64);
    expect(r.stderr).toMatch(/^indexbot: --params set 2 of 2 \{"maxTokens":0\.5\}: \S+: params of "rebalance-front-run" are invalid: maxTokens: [^\n]+ \[USAGE_INVALID\]\n$/);
  });
});

describe('a comma-separated list flag', () => {
  it('takes the names and refuses a list of none', () => {
    expect(listOption(' a, b ,,c ')).toEqual(['a', 'b', 'c']);
    expect(() => listOption('')).toThrow('expected a comma-separated list, e.g. a,b, got ""');
    expect(() => listOption(' , ')).toThrow('got " , "');
  });

  it("--indexes '' is a usage error, in one line, before anything runs", () => {
    const r = spawnSync(process.execPath, ['bin/indexbot.js', 'backtest', '--strategy', 'rebalance-front-run', '--indexes', ''], { encoding: 'utf8' });
    expect(r.status).toBe(64);
    expect(r.stderr).toBe(`indexbot: option '--indexes <ids>' argument '' is invalid. expected a comma-separated list, e.g. a,b, got "" [USAGE_INVALID]\n`);
  });
});

describe('backtest --params given twice alike', () => {
  it('is a usage error naming the two runs and their params, before anything runs', () => {
    const r = spawnSync(
      process.execPath,
      ['bin/indexbot.js', 'backtest', '--strategy', 'rebalance-front-run', '--params', '{"holdHours":6}', '--params', '{"holdHours":12}', '--params', '{"holdHours":6}'],
      {
        encoding: 'utf8',
      },
    );
    expect(r.status).toBe(64);
    expect(r.stderr).toMatch(/^indexbot: --params: runs 1 and 3 have the same params, \{[^\n]*"holdHours":6[^\n]*\}: give each set once \[USAGE_INVALID\]\n$/);
  });
});

describe('status with a broken config named by --config', () => {
  it('says so in one line, then shows the default database', () => {
    const config = tempJsonFile('indexbot.json', { baseUrl: 'http://127.0.0.1:9/v1', intervls: {} });
    const r = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--config', config], { encoding: 'utf8', cwd: process.cwd() });
    expect(r.stderr.split('\n')[0]).toBe(`indexbot: ${config}: unknown key "intervls"; showing the default database instead`);
  });

  it('with --check (monitoring) or --json (a script), is refused (exit 78) rather than reading the default database (--json: found by trial 26)', () => {
    const config = tempJsonFile('indexbot.json', { baseUrl: 'http://127.0.0.1:9/v1', intervls: {} });
    const missing = join(dirname(config), 'typo.json');
    for (const [flag, file, why] of [
      ['--check', config, 'unknown key "intervls"'],
      ['--json', config, 'unknown key "intervls"'],
      ['--json', missing, 'cannot read config file'],
    ] as const) {
      const r = spawnSync(process.execPath, ['bin/indexbot.js', 'status', flag, '--config', file], { encoding: 'utf8', cwd: process.cwd() });
      expect(r.status).toBe(78);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(new RegExp(`^indexbot: [^\\n]*${why}[^\\n]*; status cannot tell which database to read: fix it, or name the database with --db \\[CONFIG_INVALID\\]\\n$`));
    }
  });
});
