import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDoctor } from '../../src/cli/doctor-command.ts';
import { loadConfig } from '../../src/config/index.ts';
import { RunLock, SnapshotStore } from '../../src/store/index.ts';
import { databaseWithParkedEvents } from '../helpers/parked.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

describe('reads that must not mislead', () => {
  it('strategies retry without the parked strategy loaded says so and exits non-zero, keeping the events parked', { timeout: 60_000 }, async () => {
    const db = await databaseWithParkedEvents('test/fixtures/strategies/mixed', 3);
    const before = SnapshotStore.open(db, { readonly: true });
    const parked = before.strategies.parked().length;
    before.close();
    expect(parked).toBeGreaterThanOrEqual(3);
    const retry = spawnSync(process.execPath, ['bin/indexbot.js', 'strategies', 'retry', '--db', db, '--strategies', 'test/fixtures/strategies/counting'], { encoding: 'utf8' });
    expect(retry.stdout).not.toContain('parked events delivered');
    expect(retry.stderr.trim().split('\n')).toHaveLength(1);
    expect(retry.stderr).toMatch(new RegExp(`^indexbot: strateg(y|ies) .*"always-throws".* not loaded from test/fixtures/strategies/counting \\(${parked} parked event\\(s\\)\\)`));
    expect(retry.status).toBe(78);
    const after = SnapshotStore.open(db, { readonly: true });
    expect(after.strategies.parked()).toHaveLength(parked);
    after.close();
  });

  it('strategies retry at a path with no database says so, exits 78 and makes nothing there (found by trial 23: it left an empty database behind)', () => {
    const db = join(dirname(tempDbPath()), 'typo', 'bot.db');
    const retry = spawnSync(process.execPath, ['bin/indexbot.js', 'strategies', 'retry', 'always-throws', '--db', db, '--strategies', 'test/fixtures/strategies/mixed'], { encoding: 'utf8' });
    expect(retry.stderr).toBe(`indexbot: no database at ${db}: pass the --db (or --config) the daemon runs with [STORE_UNAVAILABLE]\n`);
    expect(retry.status).toBe(78);
    expect(existsSync(dirname(db))).toBe(false);
  });

  it('strategies retry while a daemon with no HTTP face holds the database says how to reach it, not another --db (found by trial 23)', async () => {
    const db = await databaseWithParkedEvents('test/fixtures/strategies/mixed', 1);
    const lock = RunLock.acquire(db);
    try {
      const retry = spawnSync(process.execPath, ['bin/indexbot.js', 'strategies', 'retry', 'always-throws', '--db', db, '--strategies', 'test/fixtures/strategies/mixed'], { encoding: 'utf8' });
      expect(retry.stderr).toBe(
        `indexbot: pid ${process.pid} runs on ${db} and recorded no HTTP face yet: try again once it has started, or stop it and run indexbot strategies retry always-throws --db ${db} [CONFIG_INVALID]\n`,
      );
      expect(retry.status).toBe(78);
    } finally {
      lock.release();
    }
  });

  it('strategies retry takes the name as the dashboard and Telegram do, or as --strategy (found by a trial: "too many arguments")', () => {
    const db = tempDbPath();
    SnapshotStore.open(db).close();
    const retry = (args: string[]) =>
      spawnSync(process.execPath, ['bin/indexbot.js', 'strategies', 'retry', ...args, '--db', db, '--strategies', 'test/fixtures/strategies/counting'], { encoding: 'utf8' });
    for (const args of [['nosuch'], ['--strategy', 'nosuch']]) {
      const r = retry(args);
      // A name nothing loaded nor parked: a mistyped argument, exit 64 as for pause and resume (trial 26: 78 here alone).
      expect(r.stderr).toBe('indexbot: no strategy named "nosuch" in test/fixtures/strategies/counting (there: counting), and none has parked events [USAGE_INVALID]\n');
      expect(r.status).toBe(64);
    }
    const both = retry(['one', '--strategy', 'other']);
    expect(both.stderr).toBe('indexbot: strategies retry: the name "one" and --strategy "other" differ; give one [USAGE_INVALID]\n');
    expect(both.status).toBe(64);
  });

  it('doctor without a credential names INDEXBOT_API_KEY', async () => {
    const sandbox = await testSandbox();
    try {
      const checks = await runDoctor(loadConfig({ baseUrl: sandbox.baseUrl, db: tempDbPath() }, {}));
      const credentials = checks.find((c) => c.name === 'credentials')!;
      expect(credentials.detail).toContain('INDEXBOT_API_KEY');
      expect(credentials.detail).toContain('public tier');
      expect(checks.find((c) => c.name === 'http')).toBeUndefined();
    } finally {
      await sandbox.close();
    }
  });

  it('doctor warns of http settings that turn no HTTP face on', async () => {
    const sandbox = await testSandbox();
    const db = tempDbPath();
    const file = join(dirname(db), 'indexbot.json');
    writeFileSync(file, JSON.stringify({ baseUrl: sandbox.baseUrl, db, http: { token: 'env:HTTP_TOKEN' } }));
    try {
      const checks = await runDoctor(loadConfig({ config: file }, {}));
      expect(checks.find((c) => c.name === 'http')).toEqual({
        verdict: 'WARN',
        name: 'http',
        detail: `${file}: http.token set but not http.listen: no HTTP face (metrics, dashboard, API, event stream) runs; set http.listen or pass --http`,
      });
    } finally {
      await sandbox.close();
    }
  });
});
