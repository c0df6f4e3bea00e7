import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/api/index.ts';
import { backfill } from '../../src/poller/index.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { runCli } from '../helpers/daemon.ts';
import { control, testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

/** One line on stderr, no stack trace, naming every given fragment, and the exit code. */
function expectOneLine(res: { status: number | null; stderr: string }, status: number, ...fragments: string[]) {
  const lines = res.stderr.trim().split('\n');
  expect(lines, res.stderr).toHaveLength(1);
  expect(res.stderr).not.toMatch(/\n\s+at /);
  for (const f of fragments) expect(res.stderr).toContain(f);
  expect(res.status).toBe(status);
}

// Each case is a CLI process of its own (several seconds on a busy machine): one per kind of range.
describe('numeric options have a range, and a bad value is one line with exit 64', () => {
  it.each([
    [['sandbox', '--speed', '1e15'], '--speed', '1e15'],
    [['demo', '--duration-s', '3000000'], '--duration-s', '3000000'],
    [['backtest', '--strategy', 'x', '--fee-bps', '1000000'], '--fee-bps', '1000000'],
    [['backtest', '--strategy', 'x', '--cash', '0'], '--cash', '0'],
    [['backfill', '--from', '2025-02-30'], '--from', '2025-02-30'],
  ])('%j', { timeout: 60_000 }, async (args, flag, value) => {
    expectOneLine(await runCli(args), 64, flag, `"${value}"`);
  });
});

describe('ranges and ports', { timeout: 60_000 }, () => {
  let sandbox: Sandbox;
  let db: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    sandbox = await testSandbox();
    db = tempDbPath();
    const store = SnapshotStore.open(db);
    const client = new IndexClient({ baseUrl: sandbox.baseUrl, apiKey: sandbox.keys.premium, tier: 'premium', windowMs: 10_000, pageSize: 100 });
    await backfill({ client, store, indexes: ['mindex'], from: Date.parse('2026-11-01T00:00:00Z'), to: Date.parse('2026-11-10T00:00:00Z') });
    store.close();
    const config = join(dirname(db), 'indexbot.json');
    writeFileSync(config, JSON.stringify({ db }));
    env = { INDEXBOT_CONFIG: config };
  }, 60_000);
  afterAll(() => sandbox.close());

  it('backtest: --from after --to, or equal, is one line naming both', async () => {
    expectOneLine(
      await runCli(['backtest', '--strategy', 'rebalance-alert', '--from', '2026-11-08', '--to', '2026-11-02'], env),
      64,
      '--from 2026-11-08T00:00:00Z is not before --to 2026-11-02T00:00:00Z',
    );
    expectOneLine(await runCli(['backtest', '--strategy', 'rebalance-alert', '--from', '2026-11-05', '--to', '2026-11-05'], env), 64, '--from 2026-11-05T00:00:00Z is not before --to');
    // An interval the cache lacks: it told to run a backfill over the same reversed range, which is refused too (trial 25).
    expectOneLine(
      await runCli(['backtest', '--strategy', 'rebalance-alert', '--interval', '1d', '--from', '2026-09-01', '--to', '2026-06-01'], env),
      64,
      '--from 2026-09-01T00:00:00Z is not before --to 2026-06-01T00:00:00Z',
    );
    // A flag before the database it would read: with none there, the range is still what is wrong (trial 30: 'no database', 78).
    const required: Record<string, string[]> = {
      backtest: [],
      'check-lookahead': [],
      // Each command's required flags, naming files that are not there: the range is refused before they are read.
      'walk-forward': ['--grid', 'none.json', '--train', '30d', '--test', '10d'],
      optimize: ['--space', 'none.json', '--trials', '4'],
    };
    for (const [command, more] of Object.entries(required)) {
      expectOneLine(
        await runCli([command, '--strategy', 'rebalance-alert', ...more, '--from', '2026-11-08', '--to', '2026-11-02', '--db', join(dirname(db), 'none.db')]),
        64,
        '--from 2026-11-08T00:00:00Z is not before --to 2026-11-02T00:00:00Z',
      );
    }
  });

  it('backtest: --from past the cache is one line naming the flag and what the cache holds', async () => {
    expectOneLine(await runCli(['backtest', '--strategy', 'rebalance-alert', '--from', '2026-12-01'], env), 64, '--from 2026-12-01', 'is not before the last cached point');
    expectOneLine(
      await runCli(['backtest', '--strategy', 'rebalance-alert', '--from', '2026-12-01', '--to', '2027-01-01'], env),
      64,
      '--from 2026-12-01T00:00',
      'holds 1h history from 2026-11-01T00:00',
    );
  });

  it('backtest: a --from or --to far outside the cache is a gap: one line naming the flag and what the cache holds, or with --allow-gaps a run over the cached part', async () => {
    expectOneLine(
      await runCli(['backtest', '--strategy', 'rebalance-alert', '--from', '2026-10-01', '--to', '2026-11-05'], env),
      64,
      '--from 2026-10-01T00:00',
      'holds 1h history from 2026-11-01T00:00',
      'start at --from 2026-11-01T00:00',
      '--allow-gaps',
    );
    expectOneLine(
      await runCli(['backtest', '--strategy', 'rebalance-alert', '--from', '2026-11-02', '--to', '2026-12-01'], env),
      64,
      '--to 2026-12-01T00:00',
      'holds 1h history from 2026-11-01T00:00',
    );
    const out = join(dirname(db), 'narrowed');
    const run = await runCli(['backtest', '--strategy', 'rebalance-alert', '--from', '2026-10-01', '--to', '2026-11-05', '--allow-gaps', '--json', '--out', out], env);
    expect(run.status, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.settings.from).toBe('2026-11-01T00:00:00.000Z');
    expect(report.settings.requested).toEqual({ from: '2026-10-01T00:00:00.000Z', to: '2026-11-05T00:00:00.000Z' });
    expect(report.metrics.days).toBe(4);
    expect(report.benchmarks.map((b: { days: number }) => b.days)).toEqual([4]);
    expect(report.warnings.join('\n')).toContain('of the requested 2026-10-01T00:00 .. 2026-11-05T00:00');
  });

  it('run: a bad --role is said before the config it decides, exit 64 (it said "no base URL", exit 78)', async () => {
    expectOneLine(await runCli(['run', '--role', 'runner', '--db', tempDbPath()], { INDEXBOT_CONFIG: '' }), 64, '--role: expected one of all, collector, strategies, got "runner"');
  });

  it('backfill: --from after --to, and --from in the future, are one line', async () => {
    expectOneLine(await runCli(['backfill', '--from', '2026-11-08', '--to', '2026-11-02', '--base-url', sandbox.baseUrl]), 64, '--from 2026-11-08T00:00:00Z is not before --to 2026-11-02T00:00:00Z');
    expectOneLine(await runCli(['backfill', '--from', '2999-01-01', '--base-url', sandbox.baseUrl]), 64, '--from 2999-01-01T00:00:00Z is not before now');
    // An index --indexes names that the server does not list: a bad flag, 64, as backtest says it (trial 28: 78 here).
    expectOneLine(await runCli(['backfill', '--from', '2026-11-01', '--indexes', 'nosuchindex', '--base-url', sandbox.baseUrl]), 64, '--indexes: unknown index "nosuchindex"; the server lists');
  });

  it('backfill says it is waiting, every 5 s, while no page comes: off a terminal it was silent for minutes (trial 29)', async () => {
    // The first history page takes 12 s (then a 503, retried): no page in that time.
    await control(sandbox, '/faults', { kind: 'delay', delay_ms: 12_000, count: 1, path_prefix: '/indexes/mindex/history' });
    const r = await runCli(['backfill', '--from', '2026-11-01', '--indexes', 'mindex', '--base-url', sandbox.baseUrl, '--db', tempDbPath()], {
      INDEXBOT_API_KEY: sandbox.keys.premium,
    });
    expect(r.status, r.stderr).toBe(0);
    const waiting = r.stderr
      .split('\n')
      .filter((l) => l.includes('backfill waiting'))
      .map((l) => JSON.parse(l) as { msg: string; quietS: number });
    expect(waiting.length).toBeGreaterThanOrEqual(1);
    expect(waiting[0]!.msg).toMatch(/^backfill waiting: no page in the last [5-9] s \(0 stored\); its requests go after the polls of any process on this key$/);
  }, 60_000);

  it('backfill stopped by Ctrl-C says how many pages it stored, exit 75', async () => {
    // sindex's first page hangs, so the backfill is still running once mindex is stored.
    await control(sandbox, '/faults', { kind: 'delay', delay_ms: 30_000, count: 1, path_prefix: '/indexes/sindex' });
    const into = tempDbPath();
    const child = spawn(process.execPath, ['bin/indexbot.js', 'backfill', '--from', '2026-10-01', '--indexes', 'mindex,sindex', '--base-url', sandbox.baseUrl, '--db', into], {
      env: { ...process.env, INDEXBOT_API_KEY: sandbox.keys.premium },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    const mindexStored = () => {
      if (!existsSync(into)) return false;
      try {
        const store = SnapshotStore.open(into, { readonly: true });
        try {
          return store.history.coverage('history:1h', 'mindex').length > 0 && store.history.coverage('rebalancing', 'mindex').length > 0;
        } finally {
          store.close();
        }
      } catch {
        return false;
      }
    };
    while (!mindexStored()) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGINT');
    expect(await closed).toBe(75);
    const last = stderr.trim().split('\n').at(-1)!;
    const m = /^indexbot: backfill interrupted: (\d+) page\(s\) stored in (.+); run the same command again to resume \(what is held is not fetched again\) \[INTERRUPTED\]$/.exec(last);
    expect(m, last).not.toBeNull();
    expect(m![2]).toBe(into);
    // mindex's pages (a month of hourly points, and its rebalancing records) and none of sindex's.
    expect(Number(m![1])).toBeGreaterThanOrEqual(2);
    const again = await runCli(['backfill', '--from', '2026-10-01', '--indexes', 'mindex,sindex', '--base-url', sandbox.baseUrl, '--db', into], { INDEXBOT_API_KEY: sandbox.keys.premium });
    expect(again.status, again.stderr).toBe(0);
    // What was kept is not fetched again (the frozen sandbox has nothing past its clock).
    expect(again.stdout).toMatch(/\n {2}mindex +(already cached|\+0 points, \+0 rebalancing records);/);
    expect(again.stdout).toMatch(/\n {2}sindex +\+[1-9]\d* points/);
  });

  it('backfill stopped by a malformed page says what it kept and that the same command resumes, exit 75 (trial 34: neither)', async () => {
    const into = tempDbPath();
    // mindex's pages come first and are kept; sindex's history answers a body that is not JSON.
    await control(sandbox, '/faults', { kind: 'malformed', count: 1, path_prefix: '/indexes/sindex/history' });
    const r = await runCli(['backfill', '--from', '2026-10-01', '--indexes', 'mindex,sindex', '--base-url', sandbox.baseUrl, '--db', into], { INDEXBOT_API_KEY: sandbox.keys.premium });
    expect(r.status).toBe(75);
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(
      new RegExp(
        `^indexbot: response from GET /indexes/sindex/history \\(HTTP 200\\) is not JSON .*; backfill stopped: [1-9]\\d* page\\(s\\) stored in ${into.replaceAll('.', '\\.')}; run the same command again to resume \\(what is held is not fetched again\\) \\[RESPONSE_MALFORMED\\]$`,
      ),
    );
    const again = await runCli(['backfill', '--from', '2026-10-01', '--indexes', 'mindex,sindex', '--base-url', sandbox.baseUrl, '--db', into], { INDEXBOT_API_KEY: sandbox.keys.premium });
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/\n {2}mindex +(already cached|\+0 points, \+0 rebalancing records);/);
  });

  it('sandbox: a port already in use is one line naming it', async () => {
    const port = new URL(sandbox.origin).port;
    expectOneLine(await runCli(['sandbox', '--port', port]), 64, `--port ${port}`, 'already in use');
  });
});

describe('config numbers out of range reach the user as one line with exit 78', { timeout: 60_000 }, () => {
  it.each([[{ alerts: { giveUpAfterHours: 1e308 } }], [{ strategies: { timeoutMs: 2 ** 31 } }]])('%j', async (extra) => {
    const db = tempDbPath();
    const config = join(dirname(db), 'indexbot.json');
    writeFileSync(config, JSON.stringify({ baseUrl: 'http://127.0.0.1:9/v1', db, ...extra }));
    expectOneLine(await runCli(['run', '--config', config]), 78, config, 'Too big');
  });
});

describe('the event stream flag', { timeout: 60_000 }, () => {
  it('a malformed --events URL is one line naming the flag and what is wrong, exit 64 as for any bad flag (it was 78); from INDEXBOT_EVENTS_URL, 78', async () => {
    const res = await runCli(['run', '--role', 'strategies', '--events', 'redis-cluster://127.0.0.1:1,bad', '--db', tempDbPath()]);
    expectOneLine(res, 64, '--events: the event stream: expected a redis://', 'host:port for each cluster node, got "bad"');
    const fromEnv = await runCli(['run', '--role', 'strategies', '--db', tempDbPath()], { INDEXBOT_EVENTS_URL: 'redis://127.0.0.1:notaport' });
    expectOneLine(fromEnv, 78, 'INDEXBOT_EVENTS_URL: the event stream: expected a redis://', 'its port is not a number from 1 to 65535');
    expect(res.stderr).not.toContain('rateLimit.redis');
  });

  it.each(['', 'bad name', 'x'.repeat(129)])('a --group Redis cannot take (%j) is one line naming the flag, exit 64 (it was an internal error, exit 70)', async (group) => {
    const res = await runCli(['run', '--role', 'strategies', '--events', 'redis://127.0.0.1:1', '--group', group, '--db', tempDbPath()]);
    expectOneLine(res, 64, "option '--group <name>'", `expected 1-128 letters, digits, '.', ':', '_' or '-', got "${group}"`);
  });

  it('--events without a role that uses it is refused, not ignored: exit 64', async () => {
    expectOneLine(await runCli(['run', '--events', 'redis://127.0.0.1:1', '--base-url', 'http://127.0.0.1:9/v1', '--db', tempDbPath()]), 64, '--events', '--role collector');
  });
});

// The deploy files set INDEXBOT_LOG_FORMAT=json: the failure's line is then one of the JSON lines a log shipper parses, not plain text among them.
describe('with --log-format json or INDEXBOT_LOG_FORMAT=json, the last line is a JSON log line', { timeout: 60_000 }, () => {
  const lastJson = (res: { status: number | null; stderr: string }) => {
    const lines = res.stderr.trim().split('\n');
    expect(lines, res.stderr).toHaveLength(1);
    return JSON.parse(lines[0]!) as Record<string, unknown>;
  };

  it('an input error, a config error and a usage error, each with its code and exit code; no credential in it', async () => {
    const usage = await runCli(['run', '--tier', 'nope', '--log-format', 'json']);
    expect(usage.status).toBe(64);
    expect(lastJson(usage)).toMatchObject({ level: 60, code: 'USAGE_INVALID', exitCode: 64, msg: expect.stringContaining('--tier') });
    expect(lastJson(usage).time).toEqual(expect.any(Number));
    const unknownFlag = await runCli(['run', '--log-format=json', '--bogus']);
    expect(lastJson(unknownFlag)).toMatchObject({ code: 'USAGE_INVALID', exitCode: 64, msg: expect.stringContaining("unknown option '--bogus'") });
    const dir = dirname(tempDbPath());
    const config = join(dir, 'typo.json');
    writeFileSync(config, JSON.stringify({ pollIntervals: 5 }));
    const key = 'sk_live_secretvalue1234';
    const configError = await runCli(['run', '--config', config, '--base-url', `http://user:${key}@127.0.0.1:9/v1`], { INDEXBOT_LOG_FORMAT: 'json', INDEXBOT_API_KEY: key });
    expect(configError.status).toBe(78);
    expect(lastJson(configError)).toMatchObject({ code: 'CONFIG_INVALID', exitCode: 78, msg: expect.stringContaining('unknown key "pollIntervals"') });
    expect(configError.stderr).not.toContain(key);
    // Plain, as before, when the format was not asked for (logs are JSON on a pipe all the same).
    expectOneLine(await runCli(['run', '--tier', 'nope']), 64, 'indexbot: --tier', '[USAGE_INVALID]');
  });
});
