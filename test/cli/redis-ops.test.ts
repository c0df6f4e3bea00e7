import { spawnSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRedis } from '../../src/cli/redis.ts';
import { loadConfig } from '../../src/config/index.ts';
import { caught } from '../helpers/caught.ts';
import { lockIsFree, runCli, spawnDaemon, waitFor, writeConfig } from '../helpers/daemon.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { type TestRedis, freePort, startRedis } from '../helpers/redis.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

describe('Redis in config and doctor', () => {
  it('takes the URL from rateLimit.redis or INDEXBOT_REDIS_URL (which wins), and names a bad one without repeating it', () => {
    const db = tempDbPath();
    const path = writeConfig(db, { baseUrl: 'http://127.0.0.1:1/v1', rateLimit: { redis: 'redis://127.0.0.1:6379/1' } });
    expect(loadConfig({ config: path }, {}).redisUrl).toBe('redis://127.0.0.1:6379/1');
    expect(loadConfig({ config: path }, { INDEXBOT_REDIS_URL: 'redis://other:6379' }).redisUrl).toBe('redis://other:6379');
    const bad = caught(() => loadConfig({ config: path }, { INDEXBOT_REDIS_URL: 'http://:s3cret@host:6379' }));
    // Named where it came from: the variable here, the file's key below.
    expect(bad.message).toMatch(/^the environment: INDEXBOT_REDIS_URL: expected a redis:\/\//);
    expect(bad.message).not.toContain('s3cret');
    const badInFile = caught(() => loadConfig({ config: writeConfig(db, { baseUrl: 'http://127.0.0.1:1/v1', rateLimit: { redis: 'http://:s3cret@host:6379' } }) }, {}));
    expect(badInFile.message).toMatch(/indexbot\.json: rateLimit\.redis: expected a redis:\/\//);
    expect(badInFile.message).not.toContain('s3cret');
    const viaEnv = writeConfig(db, { baseUrl: 'http://127.0.0.1:1/v1', rateLimit: { redis: 'env:MY_REDIS' } });
    expect(loadConfig({ config: viaEnv }, { MY_REDIS: 'rediss://:pw@h:6380' }).redisUrl).toBe('rediss://:pw@h:6380');
    expect(caught(() => loadConfig({ config: viaEnv }, {})).message).toMatch(/MY_REDIS is not set/);
  });

  it("refuses a database that is not a number, and one past the server's, with one line, not a stack trace (trial 29)", { timeout: 60_000 }, async () => {
    const db = tempDbPath();
    const path = writeConfig(db, { baseUrl: 'http://127.0.0.1:1/v1', rateLimit: { redis: 'redis://127.0.0.1:6379/abc' } });
    expect(caught(() => loadConfig({ config: path }, {})).message).toMatch(/rateLimit\.redis: .*its path is not a database number/);
    const runner = await runCli(['run', '--db', db, '--role', 'strategies', '--events', `redis://127.0.0.1:${redis.port}/abc`]);
    expect(runner.stderr.trim().split('\n')).toHaveLength(1);
    expect(runner.stderr).toMatch(/--events: .*its path is not a database number, as in redis:\/\/host:6379\/0.*\[USAGE_INVALID\]/);
    expect(runner.status).toBe(64);
    // Past the server's 16 databases: ioredis went on in database 0, reading another's stream.
    const past = await runCli(['run', '--db', db, '--role', 'strategies', '--events', `redis://127.0.0.1:${redis.port}/99`]);
    expect(past.stderr.trim().split('\n')).toEqual([
      `indexbot: --events redis://127.0.0.1:${redis.port}/99: the event stream's Redis refused the database number (ERR DB index is out of range) [CONFIG_INVALID]`,
    ]);
    expect(past.status).toBe(78);
    expect((await checkRedis(`redis://127.0.0.1:${redis.port}/99`, 2_000)).detail).toBe(`redis://127.0.0.1:${redis.port}/99: database number refused (ERR DB index is out of range)`);
  });

  it('a second runner given the group another database reads through is refused at its start: each would get part of the events (trial 29)', { timeout: 90_000 }, async () => {
    const events = ['--role', 'strategies', '--events', redis.url, '--group', 'same', '--strategies', 'test/fixtures/strategies/counting'];
    const first = spawnDaemon(['--db', tempDbPath(), ...events], {});
    try {
      await waitFor('the first runner running', () => /indexbot running/.test(first.output()), 60_000, 50);
      const second = await runCli(['run', '--db', tempDbPath(), ...events]);
      expect(second.stderr.trim().split('\n')).toHaveLength(1);
      expect(second.stderr.trim()).toMatch(
        /^indexbot: --group same: another runner reads through it \(\S+:\S+\.db\), and each would get part of the events; give each runner its own --group .*\[CONFIG_INVALID\]$/,
      );
      expect(second.status).toBe(78);
    } finally {
      first.child.kill('SIGTERM');
      await first.exited;
    }
  });

  it('doctor --role strategies checks a runner as it runs: no API, the stream it needs (trial 29: FAIL server on a host that calls none)', { timeout: 60_000 }, async () => {
    const base = ['doctor', '--db', tempDbPath(), '--base-url', 'http://127.0.0.1:1/v1', '--role', 'strategies'];
    const ok = await runCli([...base, '--events', redis.url]);
    expect(ok.stdout).toContain('PASS  server           not checked: a runner (--role strategies) calls no API; its collector does');
    expect(ok.stdout).toMatch(/\nPASS {2}event stream {5}redis:\/\/127\.0\.0\.1:\d+: Redis /);
    expect(ok.stdout).not.toMatch(/^FAIL/m);
    expect(ok.status).toBe(0);
    // The runner's last read as its database recorded it: a pass while recent, a warning once old (trial 33: PASS from a record beside a FAIL for the same Redis).
    const recorded = tempDbPath();
    const store = SnapshotStore.open(recorded);
    store.setRuntime('eventStreamRead', { stream: 'indexbot:events', group: 'box-1', lag: 0, pending: 0 }, Date.now() - 60_000);
    store.close();
    const old = await runCli(['doctor', '--db', recorded, '--base-url', 'http://127.0.0.1:1/v1', '--role', 'strategies', '--events', redis.url]);
    expect(old.stdout).toMatch(
      /\nWARN {2}stream reads {5}as the database recorded: group box-1, lag 0, pending 0 at its last answered read, 6\d s ago: no runner reads now, or its Redis does not answer\n/,
    );
    const noStream = await runCli(base);
    expect(noStream.stdout).toContain("FAIL  event stream     --role strategies needs the event stream's Redis: --events redis://host:6379 or INDEXBOT_EVENTS_URL");
    expect(noStream.status).toBe(1);
    const bad = await runCli(['doctor', '--role', 'runner']);
    expect(bad.stderr.trim()).toBe('indexbot: --role: expected one of all, collector, strategies, got "runner" [USAGE_INVALID]');
    expect(bad.status).toBe(64);
  });

  it('doctor: reachable with its version, warns of an eviction policy that can drop the budget, fails unreachable without the password', async () => {
    const ok = await checkRedis(redis.url);
    expect(ok).toMatchObject({ ok: true });
    expect(ok.detail).toMatch(/Redis \d+\.\d+\.\d+, maxmemory-policy noeviction/);
    expect(ok.warning).toBeUndefined();

    const { Redis } = await import('ioredis');
    const admin = new Redis(redis.url);
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const risky = await checkRedis(redis.url);
    expect(risky.warning).toMatch(/allkeys-lru.*noeviction/);
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    admin.disconnect();

    const down = await checkRedis(`redis://:hunter2@127.0.0.1:${await freePort()}`, 1_000);
    expect(down.ok).toBe(false);
    expect(down.detail).toMatch(/not reachable/);
    expect(down.detail).not.toContain('hunter2');
  });

  it('status shows the shared budget of each gate and the processes drawing on it', async () => {
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    const shared = { mode: 'shared', limit: 10, burst: 10, tokens: 3.5, processes: ['box-a:101:aa', 'box-b:202:bb'], share: 2 };
    const gate = {
      name: 'key:abcd1234',
      limit: 10,
      // A token bucket may hold more than a window's limit: remaining above the limit is then no error.
      burst: 15,
      windowMs: 60_000,
      tokens: 4,
      remaining: 7,
      resetAt: undefined,
      pausedUntil: undefined,
      queued: 0,
      inFlight: 0,
      serverModel: 'window',
      sent: 12,
      rateLimited: 0,
      shared,
    };
    store.setRuntime('gates', { gates: [gate, { ...gate, name: 'key:ffff0000', shared: { ...shared, mode: 'local', share: 3 } }], schedule: [], pid: 1 }, Date.now());
    store.close();
    const out = await runCli(['status', '--db', db]);
    expect(out.status).toBe(0);
    expect(out.stdout).toContain('key:abcd1234     limit 10/60s  burst 15  tokens 4  remaining 7');
    expect(out.stdout).toContain('shared budget (Redis): limit 10  burst 10  tokens 3.5; 2 processes in the last minute: box-a:101:aa, box-b:202:bb');
    expect(out.stdout).toContain('shared budget: Redis unreachable, pacing to 1/3 of it locally; 2 processes when Redis last answered: box-a:101:aa, box-b:202:bb');

    // The process that reported them has stopped: status says the figures are its last.
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
    const after = SnapshotStore.open(db);
    after.setRuntime('gates', { gates: [gate], schedule: [], pid: gone }, Date.now());
    after.close();
    const stale = await runCli(['status', '--db', db]);
    expect(stale.stdout).toMatch(new RegExp(`\\nRate gates \\(reported [^)]+ by pid ${gone}, which is no longer running\\)\\n`));
    expect(stale.stdout).toContain('shared budget (Redis): limit 10  burst 10  tokens 3.5; 2 processes in the minute before that report: box-a:101:aa, box-b:202:bb');
    expect(JSON.parse((await runCli(['status', '--db', db, '--json'])).stdout).reporter).toEqual({ pid: gone, running: false });
  }, 60_000);
});

describe('a Redis that refuses the password', () => {
  let guarded: TestRedis;
  beforeAll(async () => {
    guarded = await startRedis(['--requirepass', 'right-pw-42']);
  });
  afterAll(async () => {
    await guarded?.stop();
  });

  it('doctor says authentication failed, in Redis words, not "not reachable"', async () => {
    const refused = await checkRedis(`redis://:n0t-Th1s@127.0.0.1:${guarded.port}`, 2_000);
    expect(refused.ok).toBe(false);
    expect(refused.detail).toBe(`redis://:***@127.0.0.1:${guarded.port}: authentication failed (WRONGPASS invalid username-password pair or user is disabled.)`);
    expect((await checkRedis(`redis://:right-pw-42@127.0.0.1:${guarded.port}`, 2_000)).ok).toBe(true);
  });

  it('doctor checks the event stream of a collector or runner: --events or INDEXBOT_EVENTS_URL, named, the password never shown', { timeout: 60_000 }, async () => {
    const base = ['doctor', '--db', tempDbPath(), '--base-url', 'http://127.0.0.1:9/v1'];
    const refused = await runCli([...base, '--events', `redis://:n0t-Th1s@127.0.0.1:${guarded.port}`]);
    expect(refused.stdout).toContain(`FAIL  event stream     redis://:***@127.0.0.1:${guarded.port}: authentication failed (WRONGPASS`);
    expect(refused.stdout + refused.stderr).not.toContain('n0t-Th1s');
    expect(refused.status).toBe(1);
    const fromEnv = await runCli(base, { INDEXBOT_EVENTS_URL: `redis://:right-pw-42@127.0.0.1:${guarded.port}` });
    expect(fromEnv.stdout).toMatch(/\nPASS {2}event stream {5}redis:\/\/:\*\*\*@127\.0\.0\.1:\d+: Redis \d+\.\d+\.\d+, maxmemory-policy noeviction\n/);
    const bad = await runCli([...base, '--events', 'http://nope']);
    expect(bad.stdout).toMatch(/^FAIL {2}config {8}--events: the event stream: expected a redis:\/\/.* URL/);
  });

  it('doctor says so of a redis-cluster:// URL too (its nodes refuse the password the same way)', async () => {
    const refused = await checkRedis(`redis-cluster://:n0t-Th1s@127.0.0.1:${guarded.port}`, 2_000);
    expect(refused).toEqual({ ok: false, detail: `redis-cluster://:***@127.0.0.1:${guarded.port}: authentication failed (WRONGPASS invalid username-password pair or user is disabled.)` });
  });

  it.each([
    ['a runner, --events', ['--role', 'strategies', '--events', 'URL'], {}, '--events'],
    ['a collector, INDEXBOT_EVENTS_URL', ['--role', 'collector', '--base-url', 'http://127.0.0.1:9/v1'], { INDEXBOT_EVENTS_URL: 'URL' }, 'INDEXBOT_EVENTS_URL'],
  ])('%s: stops at start with one line naming where the URL came from, exit 78, the password never shown, the lock free', { timeout: 30_000 }, async (_name, args, env, source) => {
    const url = `redis://:n0t-Th1s@127.0.0.1:${guarded.port}`;
    const db = tempDbPath();
    const withUrl = (v: string) => (v === 'URL' ? url : v);
    const r = await runCli(['run', '--db', db, ...args.map(withUrl)], Object.fromEntries(Object.entries(env).map(([k, v]) => [k, withUrl(v)])));
    expect(r.stderr.trim().split('\n')).toEqual([
      `indexbot: ${source} redis://:***@127.0.0.1:${guarded.port}: the event stream's Redis refused the credentials (WRONGPASS invalid username-password pair or user is disabled.) [CONFIG_INVALID]`,
    ]);
    expect(r.status).toBe(78);
    expect(r.stdout + r.stderr).not.toContain('n0t-Th1s');
    expect(lockIsFree(db)).toBe(true);
  });
  it.each([
    ['INDEXBOT_REDIS_URL', 'env'],
    ['rateLimit.redis', 'file'],
  ])('the shared rate budget, %s: stops at start with one line naming where the URL came from, exit 78, the password never shown, the lock free', { timeout: 30_000 }, async (_name, from) => {
    const url = `redis://:n0t-Th1s@127.0.0.1:${guarded.port}`;
    const db = tempDbPath();
    const config = writeConfig(db, { baseUrl: 'http://127.0.0.1:9/v1', ...(from === 'file' ? { rateLimit: { redis: url } } : {}) });
    chmodSync(config, 0o600);
    const r = await runCli(['run', '--db', db, '--config', config], from === 'env' ? { INDEXBOT_REDIS_URL: url } : {});
    const source = from === 'env' ? 'INDEXBOT_REDIS_URL' : `${config}: rateLimit.redis`;
    expect(r.stderr.trim().split('\n')).toEqual([
      `indexbot: ${source} redis://:***@127.0.0.1:${guarded.port}: the shared rate budget's Redis refused the credentials (WRONGPASS invalid username-password pair or user is disabled.) [CONFIG_INVALID]`,
    ]);
    expect(r.status).toBe(78);
    expect(r.stdout + r.stderr).not.toContain('n0t-Th1s');
    expect(lockIsFree(db)).toBe(true);
  });
});
