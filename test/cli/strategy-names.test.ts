import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SnapshotStore } from '../../src/store/index.ts';
import { runCli } from '../helpers/daemon.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

/** A config whose strategies block names params of `rebalance-front-runn` (misspelt) and disables a strategy that does not exist. */
function typoConfig(): string {
  const db = tempDbPath();
  const path = join(dirname(db), 'indexbot.json');
  writeFileSync(path, JSON.stringify({ baseUrl: 'http://127.0.0.1:9/v1', db, strategies: { params: { 'rebalance-front-runn': { notionalUsd: 5 } }, disabled: ['drift-reversal'] } }));
  chmodSync(path, 0o600);
  return path;
}

/**
 * A project of its own: a cache (made empty when `cache`), a strategies directory holding
 * `files` when given, and a config naming both. Returns the config's path and the directory.
 */
function project(files: Record<string, string> | undefined, cache = true): { config: string; dir: string } {
  const db = tempDbPath();
  const dir = join(dirname(db), 'strategies');
  if (files) {
    mkdirSync(dir);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  }
  if (cache) SnapshotStore.open(db).close();
  const config = join(dirname(db), 'indexbot.json');
  writeFileSync(config, JSON.stringify({ baseUrl: 'http://127.0.0.1:9/v1', db, ...(files ? { strategies: { dir } } : {}) }));
  chmodSync(config, 0o600);
  return { config, dir };
}

const FOUND = '(found drift-reversion, rebalance-alert, rebalance-front-run)';
const NAMED = 'strategies.params "rebalance-front-runn"; strategies.disabled "drift-reversal": no such strategy in strategies';

// Each case is a CLI process of its own, several seconds on a busy machine.
describe('strategies.params and strategies.disabled naming no strategy of the directory', { timeout: 120_000 }, () => {
  it('backtest (by name or by file) and run stop with one line naming them and the strategies found, exit 78', async () => {
    const env = { INDEXBOT_CONFIG: typoConfig() };
    for (const args of [['backtest', '--strategy', 'rebalance-front-run'], ['backtest', '--strategy', 'strategies/rebalance-alert.ts'], ['run']]) {
      const r = await runCli(args, env);
      expect(r.stderr.trim().split('\n'), `${args.join(' ')}: ${r.stderr}`).toHaveLength(1);
      expect(r.stderr).toContain(NAMED);
      expect(r.stderr).toContain(FOUND);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.status).toBe(78);
    }
  });

  it('doctor says FAIL for the strategies, naming them, and exits 1', async () => {
    const r = await runCli(['doctor'], { INDEXBOT_CONFIG: typoConfig() });
    expect(r.stdout).toMatch(/FAIL {2}strategies +strategies\.params "rebalance-front-runn"; strategies\.disabled "drift-reversal": no such strategy in strategies/);
    expect(r.status).toBe(1);
  });

  it('backtest by the name of a shipped example runs it from a project that does not hold it, and names the examples otherwise', async () => {
    const { config, dir } = project({ 'mine.mjs': "export default { [Symbol.for('indexbot.strategy')]: true, name: 'mine', on: {} };\n" });
    const example = await runCli(['backtest', '--strategy', 'rebalance-front-run', '--indexes', 'sindex', '--from', '2026-01-01', '--to', '2026-02-01'], { INDEXBOT_CONFIG: config });
    // The strategy was found: what stops it is the empty cache.
    expect(example.stderr.trim().split('\n').at(-1), example.stderr).toMatch(
      /holds no 1h history for sindex; run `indexbot backfill --from 2026-01-01 --to 2026-02-01 --indexes sindex` first \[BACKTEST_NO_DATA\]$/,
    );
    const unknown = await runCli(['backtest', '--strategy', 'nope'], { INDEXBOT_CONFIG: config });
    expect(unknown.stderr.trim().split('\n').at(-1)).toBe(
      `indexbot: no strategy named "nope" in ${dir} (found mine) nor among the examples (drift-reversion, rebalance-alert, rebalance-front-run); give a name or a file path [USAGE_INVALID]`,
    );
    expect(unknown.status).toBe(64);
  });

  it('backtest and check-lookahead find a shipped example by name from a folder with no strategies directory; a directory named and missing is one line, exit 78 (trial 40: exit 70, scandir)', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'indexbot-no-strategies-'));
    const db = join(cwd, 'cache.db');
    SnapshotStore.open(db).close();
    const bin = new URL('../../bin/indexbot.js', import.meta.url).pathname;
    const cli = (args: string[]) => spawnSync(process.execPath, [bin, ...args, '--db', db], { cwd, encoding: 'utf8', timeout: 60_000 });
    for (const command of ['backtest', 'check-lookahead']) {
      const r = cli([command, '--strategy', 'rebalance-front-run', '--indexes', 'sindex', '--from', '2026-01-01', '--to', '2026-02-01']);
      // The strategy was found: what stops it is the empty cache.
      expect(r.stderr.trim().split('\n'), `${command}: ${r.stderr}`).toEqual([expect.stringMatching(/^indexbot: .*holds no 1h history for sindex; .*\[BACKTEST_NO_DATA\]$/)]);
      expect(r.status).toBe(64);
    }
    const unknown = cli(['backtest', '--strategy', 'nope']);
    expect(unknown.stderr).toBe(
      'indexbot: no strategy named "nope" in strategies (found none) nor among the examples (drift-reversion, rebalance-alert, rebalance-front-run); give a name or a file path [USAGE_INVALID]\n',
    );
    expect(unknown.status).toBe(64);
    const missing = cli(['backtest', '--strategy', 'rebalance-front-run', '--strategies', 'nodir']);
    expect(missing.stderr).toBe('indexbot: strategies directory nodir does not exist [CONFIG_INVALID]\n');
    expect(missing.status).toBe(78);
  });

  it('backtest of a strategy file that is not there, or with a grid the JSON parser quotes over two lines, says so in one line', async () => {
    const { config, dir } = project(undefined);
    const missing = await runCli(['backtest', '--strategy', './my-strategy.ts'], { INDEXBOT_CONFIG: config });
    expect(missing.stderr).toBe('indexbot: strategy file ./my-strategy.ts does not exist [CONFIG_INVALID]\n');
    expect(missing.status).toBe(78);
    const grid = join(dirname(dir), 'grid.json');
    writeFileSync(grid, 'not json {\n');
    const bad = await runCli(['backtest', '--strategy', 'rebalance-front-run', '--grid', grid], { INDEXBOT_CONFIG: config });
    expect(bad.stderr).toMatch(/^indexbot: \S*grid\.json: not a readable JSON grid: .*"not json \{ ?" is not valid JSON \[CONFIG_INVALID\]\n$/);
    expect(bad.status).toBe(78);
  });

  it('backtest of a strategy whose file fails to load says why, not that there is no such strategy', async () => {
    const { config } = project({ 'broken.ts': 'export default {\n' }, false);
    const r = await runCli(['backtest', '--strategy', 'broken'], { INDEXBOT_CONFIG: config });
    const last = r.stderr.trim().split('\n').at(-1)!;
    expect(last, r.stderr).toMatch(/^indexbot: \S*broken\.ts:\d+: failed to load: .+ \[STRATEGY_LOAD\]$/);
    expect(r.stderr).not.toContain('no strategy named');
    expect(r.status).toBe(78);
  });

  it('backtest by name loads that strategy’s file alone: a broken sibling is neither run nor warned about', async () => {
    const brand = "[Symbol.for('indexbot.strategy')]: true";
    const { config } = project({
      'package.json': '{ "type": "module" }\n',
      'good.mjs': `export default Object.freeze({ name: 'good', on: {}, ${brand} });\n`,
      'broken.mjs': "globalThis.siblingRan = true;\nthrow new Error('sibling evaluated');\n",
    });
    // By name, and by its path (trial 37: a path ran every module beside it and warned of the broken ones).
    for (const strategy of ['good', join(dirname(config), 'strategies', 'good.mjs')]) {
      const r = await runCli(['backtest', '--strategy', strategy, '--indexes', 'x'], { INDEXBOT_CONFIG: config });
      // The cache is empty: the run itself stops there, after the strategy was found.
      expect(r.stderr.trim().split('\n').at(-1)).toMatch(/^indexbot: \S*indexbot\.db holds no 1h history for x; .*\[BACKTEST_NO_DATA\]$/);
      expect(r.stderr).not.toContain('broken');
      expect(r.stderr).not.toContain('sibling evaluated');
    }
  });

  it('backtest by name warns of a sibling file that declares the same name, as a full load does (trial 34: the file-name match won without a word)', async () => {
    const brand = "[Symbol.for('indexbot.strategy')]: true";
    const { config } = project({
      'package.json': '{ "type": "module" }\n',
      'equal-weight.mjs': `export default Object.freeze({ name: 'equal-weight', on: {}, ${brand} });\n`,
      'ew-copy.mjs': `export default Object.freeze({ name: 'equal-weight', on: {}, ${brand} });\n`,
    });
    const r = await runCli(['backtest', '--strategy', 'equal-weight', '--indexes', 'x'], { INDEXBOT_CONFIG: config });
    expect(r.stderr).toMatch(/ew-copy\.mjs: strategy name \\"equal-weight\\" is already used by \S*equal-weight\.mjs/);
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(/\[BACKTEST_NO_DATA\]$/);
  });
});
