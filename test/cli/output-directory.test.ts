import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeDirectories } from '../../src/core/index.ts';
import { buildCache } from '../helpers/backtest-cache.ts';

const BIN = resolve('bin/indexbot.js');
const STRATEGIES = resolve('strategies');

/** One CLI process in `cwd`; its lines of our own (`indexbot: …`), apart from the JSON log. */
function run(args: string[], cwd: string): Promise<{ status: number | null; ours: string[]; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [BIN, ...args, '--strategies', STRATEGIES], { cwd, env: { ...process.env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (status) => done({ status, stderr, ours: stderr.split('\n').filter((l) => l.startsWith('indexbot:')) }));
  });
}

// Tests run as root, which writes anywhere: a path under a FILE cannot be made by anyone.
let cache: string;
let dir: string;
let aFile: string;
beforeAll(() => {
  cache = buildCache();
  dir = dirname(cache);
  aFile = join(dir, 'a-file');
  writeFileSync(aFile, '');
  writeFileSync(join(dir, 'grid.json'), JSON.stringify({ holdHours: [12, 24] }));
  writeFileSync(join(dir, 'space.json'), JSON.stringify({ holdHours: [6, 48] }));
});

describe('an output directory that cannot be made is one line, exit 78, before any replay', { timeout: 60_000 }, () => {
  const bt = ['backtest', '--strategy', 'rebalance-front-run', '--indexes', 'x'];
  it.each([
    ['backtest', [...bt]],
    ['a sweep', [...bt, '--params', '{"holdHours":12}', '--params', '{"holdHours":48}']],
    ['walk-forward', ['walk-forward', '--strategy', 'rebalance-front-run', '--indexes', 'x', '--grid', 'grid.json', '--train', '48h', '--test', '24h']],
    ['optimize', ['optimize', '--strategy', 'rebalance-front-run', '--indexes', 'x', '--space', 'space.json', '--trials', '2']],
  ])('%s --out under a file names --out', async (_name, args) => {
    const out = join(aFile, 'out');
    const r = await run([...args, '--db', cache, '--out', out], dir);
    expect(r.ours, r.stderr).toEqual([`indexbot: --out ${out}: cannot be created or written: a part of the path is a file, not a directory (ENOTDIR) [CONFIG_INVALID]`]);
    expect(r.status).toBe(78);
  });

  it('backtest without --out, where ./data is a file, names the default directory', async () => {
    writeFileSync(join(dir, 'data'), '');
    const r = await run([...bt, '--db', cache], dir);
    expect(r.ours, r.stderr).toEqual(['indexbot: output directory data/backtests: cannot be created or written: a part of the path is a file, not a directory (ENOTDIR) [CONFIG_INVALID]']);
    expect(r.status).toBe(78);
    expect(existsSync(join(dir, 'data', 'backtests'))).toBe(false);
  });
});

describe('a path under /proc, whose parent exists and holds no directories (trial 24: the process spun at full CPU and ignored SIGTERM)', { timeout: 60_000 }, () => {
  // A bounded wait: before, these never exited.
  const bounded = (args: string[]) =>
    spawnSync(process.execPath, [BIN, ...args], { cwd: dir, encoding: 'utf8', timeout: 20_000, killSignal: 'SIGKILL', env: { ...process.env, INDEXBOT_BASE_URL: 'http://127.0.0.1:9/v1' } });
  const why = 'its parent cannot hold directories (a /proc or /sys path, or a broken symlink) (ENOENT)';
  it.each([
    ['run', ['run', '--db', '/proc/nope/x.db']],
    ['backfill', ['backfill', '--db', '/proc/nope/x.db', '--from', '2026-01-01', '--to', '2026-01-02']],
  ])('%s --db is one line, exit 78', (_name, args) => {
    const r = bounded(args);
    expect(r.status, r.stderr).toBe(78);
    expect(r.stderr.trim().split('\n').at(-1)).toBe(`indexbot: cannot create the directory of /proc/nope/x.db: ${why} [STORE_UNAVAILABLE]`);
  });

  it('backtest --out is one line, exit 78', () => {
    const r = bounded(['backtest', '--strategy', STRATEGIES + '/rebalance-front-run.ts', '--indexes', 'x', '--db', cache, '--out', '/proc/nope/out']);
    expect(r.status, r.stderr).toBe(78);
    expect(r.stderr.trim().split('\n').at(-1)).toBe(`indexbot: --out /proc/nope/out: cannot be created or written: ${why} [CONFIG_INVALID]`);
  });

  it('makeDirectories makes every missing level, and throws mkdir’s own error for a file in the way', () => {
    const deep = join(dir, 'made', 'a', 'b');
    makeDirectories(deep);
    expect(existsSync(deep)).toBe(true);
    makeDirectories(deep);
    expect(() => makeDirectories(join(aFile, 'x'))).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
    expect(() => makeDirectories(aFile)).toThrow(expect.objectContaining({ code: 'EEXIST' }));
  });
});

describe('a backtest of data the cache does not hold (found by a new-user trial)', { timeout: 60_000 }, () => {
  it('names an index the cache has never heard of as a bad --indexes, not as history to backfill', async () => {
    // A writable --out: the tests above left this folder's data/backtests unmakeable.
    const r = await run(['backtest', '--strategy', 'rebalance-front-run', '--indexes', 'x,nosuchindex', '--from', '2026-03-01', '--out', join(dir, 'out-unknown'), '--db', cache], dir);
    // The backfill named is one that runs (a trial's lacked --from): the run's own range, DATE where it gave none.
    expect(r.ours).toEqual([
      expect.stringMatching(
        /^indexbot: --indexes: "nosuchindex" is no index \S+ knows \(it knows x, y\); check the name, or run `indexbot backfill --from 2026-03-01 --indexes nosuchindex` first \[USAGE_INVALID\]$/,
      ),
    ]);
    expect(r.status).toBe(64);
  });

  it('says how to backfill the interval asked for when the cache holds none of it: a usage error, as a range it does not hold is', async () => {
    const r = await run(['backtest', '--strategy', 'rebalance-front-run', '--indexes', 'x', '--interval', '1d', '--out', join(dir, 'out-1d'), '--db', cache], dir);
    expect(r.ours).toEqual([expect.stringMatching(/holds no 1d history for x; run `indexbot backfill --from DATE --indexes x --interval 1d` first \[BACKTEST_NO_DATA\]$/)]);
    expect(r.status).toBe(64);
  });
});

describe('a backtest of a strategy that names its indexes (found by a trial)', { timeout: 60_000 }, () => {
  it('replays those indexes by default, not every index the cache holds', async () => {
    const file = join(dir, 'only-x.mjs');
    writeFileSync(file, "export default { [Symbol.for('indexbot.strategy')]: true, name: 'only-x', indexes: ['x'], on: {} };\n");
    const out = join(dir, 'out-only-x');
    const r = await run(['backtest', '--strategy', file, '--db', cache, '--out', out], dir);
    expect(r.status, r.stderr).toBe(0);
    // --out is the run's own folder.
    expect(JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')).settings.indexes).toEqual(['x']);
  });
});
