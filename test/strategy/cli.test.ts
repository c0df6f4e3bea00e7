import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunLock, SnapshotStore } from '../../src/store/index.ts';
import { databaseWithParkedEvents } from '../helpers/parked.ts';

describe('indexbot status and strategies commands', () => {
  it('show parked events and each strategy’s account; retry re-delivers them', async () => {
    const db = await databaseWithParkedEvents('test/fixtures/strategies/mixed', 2);

    const parked = execFileSync(process.execPath, ['bin/indexbot.js', 'strategies', 'parked', '--db', db], { encoding: 'utf8' });
    expect(parked).toMatch(/always-throws {2}seq 1 {2}rebalance\.announced:sindex:rb_1 {2}after 1 attempts: Error: strategy bug/);
    // Through the config the daemon runs with, as retry, pause and resume take it (trial 28: unknown option '--config').
    const config = join(dirname(db), 'config.json');
    writeFileSync(config, JSON.stringify({ db }));
    expect(execFileSync(process.execPath, ['bin/indexbot.js', 'strategies', 'parked', '--config', config], { encoding: 'utf8' })).toBe(parked);

    const status = JSON.parse(execFileSync(process.execPath, ['bin/indexbot.js', 'status', '--json', '--db', db], { encoding: 'utf8' }));
    const byName = Object.fromEntries(status.strategies.map((s: { strategy: string }) => [s.strategy, s]));
    expect(byName['always-throws']).toMatchObject({ parked: 2, cursor: 2, pnlUsd: 0, equity: 10_000 });
    expect(byName.counting).toMatchObject({ parked: 0, cursor: 2 });
    const text = execFileSync(process.execPath, ['bin/indexbot.js', 'status', '--db', db], { encoding: 'utf8' });
    // The command names the database this status was read from (found by trial 23: without it, it read another).
    expect(text).toContain(`PARKED 2 (indexbot strategies retry always-throws --db ${db})\n`);
    // While a process holds the database (this one, here), the command would be refused: the hint is its HTTP face.
    const lock = RunLock.acquire(db);
    const statusLine = () =>
      execFileSync(process.execPath, ['bin/indexbot.js', 'status', '--db', db], { encoding: 'utf8' })
        .split('\n')
        .find((l) => l.includes('PARKED'));
    const face = (record: object) => {
      const store = SnapshotStore.open(db);
      store.setRuntime('httpFace', { pid: process.pid, ...record }, Date.now());
      store.close();
    };
    try {
      // An older indexbot records no face: the route, wherever it is.
      expect(statusLine()).toContain(
        `PARKED 2 (pid ${process.pid} runs on this database: POST /api/v1/strategies/always-throws/retry on its --http face, or stop it and run indexbot strategies retry always-throws --db ${db})`,
      );
      // Started with --http: the command goes through it (found by trial 22: no address, and a 415 without the content type; trial 24: no command to steer it).
      face({ url: 'http://127.0.0.1:9464/', token: true });
      expect(statusLine()).toContain(`(indexbot strategies retry always-throws --db ${db}: through pid ${process.pid}'s HTTP face at http://127.0.0.1:9464/)`);
      // Without one, the route does not exist: nothing to retry through while it runs.
      face({ url: null, token: false });
      expect(statusLine()).toContain(
        `(pid ${process.pid} runs on this database with no --http face: stop it and run indexbot strategies retry always-throws --db ${db}, or restart it with --http to retry while it runs)`,
      );
    } finally {
      lock.release();
    }
    // The record of a process that is gone says nothing.
    expect(statusLine()).toMatch(/PARKED 2 \(indexbot strategies retry always-throws --db \S+\)$/);

    const retry = spawnSync(process.execPath, ['bin/indexbot.js', 'strategies', 'retry', '--db', db, '--strategies', 'test/fixtures/strategies/mixed', '--strategy', 'always-throws'], {
      encoding: 'utf8',
      env: { ...process.env },
    });
    // Still parked: the handler failed again, which a script can tell (found by trial 22: it exited 0).
    expect(retry.status).toBe(1);
    expect(retry.stdout).toContain('0 of 2 parked events delivered; 2 still parked');
  }, 120_000);

  it('strategies retry delivers parked events once the handler is fixed, and unparks them', async () => {
    process.env.FIXABLE_BROKEN = '1';
    let db: string;
    try {
      db = await databaseWithParkedEvents('test/fixtures/strategies/fixable', 2);
    } finally {
      delete process.env.FIXABLE_BROKEN;
    }
    const before = SnapshotStore.open(db, { readonly: true });
    expect(before.strategies.parked('fixable')).toHaveLength(2);
    before.close();
    const retry = spawnSync(process.execPath, ['bin/indexbot.js', 'strategies', 'retry', '--db', db, '--strategies', 'test/fixtures/strategies/fixable', '--strategy', 'fixable'], {
      encoding: 'utf8',
    });
    expect(retry.status).toBe(0);
    expect(retry.stdout).toContain('2 of 2 parked events delivered; 0 still parked');
    const after = SnapshotStore.open(db);
    expect(after.strategies.parked('fixable')).toEqual([]);
    expect(after.strategies.stateEntries('fixable').get('seen')).toEqual(['rebalance.announced:sindex:rb_1', 'rebalance.announced:sindex:rb_2']);
    after.close();
  }, 120_000);
});
