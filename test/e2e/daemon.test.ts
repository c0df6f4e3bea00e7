import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { type EventRow, lockIsFree, readDb, sandboxConfig, spawnDaemon, waitFor, writeConfig } from '../helpers/daemon.ts';
import { control, testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const POLL_S = 1;

let sb: Sandbox;
beforeAll(async () => {
  sb = await testSandbox({ speed: 1, startTime: Date.now(), rateWindowMs: 10_000 });
});
afterAll(() => sb.close());

function daemonConfig(db: string) {
  return sandboxConfig(sb, db, {
    indexes: ['dindex', 'mindex', 'nindex'],
    intervals: { rebalancing: POLL_S, composition: POLL_S, performance: 5, indexes: 30, tokens: 30 },
    shutdownGraceMs: 3_000,
  });
}

const events = (db: string) => readDb(db, (d) => d.prepare('SELECT * FROM events ORDER BY seq').all() as EventRow[]);
const ofRebalance = (rows: EventRow[], id: string) => rows.filter((e) => (JSON.parse(e.payload) as { rebalanceId?: string }).rebalanceId === id);

describe('indexbot run against the sandbox', () => {
  it('announces and completes each rebalance exactly once, within two poll intervals, and stops cleanly', async () => {
    const db = tempDbPath();
    const config = daemonConfig(db);
    const daemon = spawnDaemon(['--config', config], { INDEXBOT_API_KEY: sb.keys.premium });
    try {
      await waitFor('first polls', () =>
        readDb(db, (d) => (d.prepare("SELECT COUNT(*) AS n FROM poll_jobs WHERE job LIKE 'rebalancing:%' AND last_success_at IS NOT NULL").get() as { n: number }).n === 3),
      );

      const second = spawnDaemon(['--config', config], { INDEXBOT_API_KEY: sb.keys.premium });
      expect(await second.exited).not.toBe(0);
      expect(second.output()).toMatch(/another indexbot \(pid \d+\) is already running/);

      const triggeredAt = Date.now();
      const a = (await control(sb, '/rebalance', { index_id: 'dindex', effective_in_seconds: 3 })).json.data;
      const b = (await control(sb, '/rebalance', { index_id: 'mindex', effective_in_seconds: 4 })).json.data;
      const c = (await control(sb, '/rebalance', { index_id: 'nindex', effective_in_seconds: 30 })).json.data;
      await control(sb, '/rebalance/cancel', { index_id: 'nindex', rebalance_id: c.id });
      await waitFor(
        'both completions',
        () => ofRebalance(events(db), b.id).some((e) => e.type === 'rebalance.completed') && ofRebalance(events(db), a.id).some((e) => e.type === 'rebalance.completed'),
      );
      await new Promise((r) => setTimeout(r, 2 * POLL_S * 1000));

      const rows = events(db);
      for (const rb of [a, b]) {
        const mine = ofRebalance(rows, rb.id);
        expect(mine.map((e) => e.type).sort()).toEqual(['rebalance.announced', 'rebalance.completed']);
        const announced = mine.find((e) => e.type === 'rebalance.announced')!;
        const completed = mine.find((e) => e.type === 'rebalance.completed')!;
        const slackMs = 500;
        expect(announced.detected_at - triggeredAt).toBeLessThanOrEqual(2 * POLL_S * 1000 + slackMs);
        expect(completed.detected_at - Date.parse(rb.effective_at)).toBeLessThanOrEqual(2 * POLL_S * 1000 + slackMs);
        expect(completed.occurred_at).toBe(Date.parse(rb.effective_at));
      }
      const cEvents = ofRebalance(rows, c.id).map((e) => e.type);
      expect(cEvents.filter((t) => t === 'rebalance.cancelled')).toHaveLength(1);
      expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect(await daemon.exited).toBe(0);
    expect(daemon.output()).toContain('indexbot stopped');
    expect(lockIsFree(db)).toBe(true);
    expect(readDb(db, (d) => d.pragma('integrity_check', { simple: true }))).toBe('ok');

    const status = JSON.parse(execFileSync(process.execPath, ['bin/indexbot.js', 'status', '--json', '--db', db], { encoding: 'utf8' }));
    expect(status.indexes.map((i: { indexId: string }) => i.indexId)).toEqual(expect.arrayContaining(['dindex', 'mindex', 'nindex']));
    expect(status.jobs.find((j: { job: string }) => j.job === 'rebalancing:dindex').lastSuccessAt).toBeGreaterThan(0);
    expect(status.events['rebalance.completed']).toBeGreaterThanOrEqual(2);
    expect(status.budget.plannedPerMin).toBeGreaterThan(0);
    expect(status.rateGates[0]).toMatchObject({ limit: 1000, rateLimited: 0 });
    const text = execFileSync(process.execPath, ['bin/indexbot.js', 'status', '--db', db], { encoding: 'utf8' });
    expect(text).toMatch(/rebalancing:dindex\s+last success/);
    expect(text).toContain('Rate gates');
  });

  it('rides out a database locked by another process past the busy timeout: logged, retried, nothing lost or doubled', async () => {
    const db = tempDbPath();
    const config = sandboxConfig(sb, db, {
      indexes: ['dindex'],
      intervals: { rebalancing: POLL_S, composition: POLL_S, performance: 30, indexes: 30, tokens: 30 },
      strategies: { dir: 'test/fixtures/strategies/counting' },
      shutdownGraceMs: 3_000,
    });
    const daemon = spawnDaemon(['--config', config], { INDEXBOT_API_KEY: sb.keys.premium });
    try {
      await waitFor('first polls', () =>
        readDb(db, (d) => (d.prepare("SELECT last_success_at FROM poll_jobs WHERE job = 'rebalancing:dindex'").get() as { last_success_at: number | null } | undefined)?.last_success_at),
      );
      const holder = new Database(db);
      holder.exec('BEGIN EXCLUSIVE');
      const lockedAt = Date.now();
      const rb = (await control(sb, '/rebalance', { index_id: 'dindex', effective_in_seconds: 600 })).json.data as { id: string };
      try {
        await waitFor('a logged busy failure', () => /"code":"STORE_BUSY"/.test(daemon.output()), 15_000);
      } finally {
        holder.exec('COMMIT');
        holder.close();
      }
      expect(Date.now() - lockedAt).toBeGreaterThanOrEqual(5_000);
      expect(daemon.child.exitCode).toBeNull();
      await waitFor('the announcement, after the lock', () => ofRebalance(events(db), rb.id).length > 0, 20_000);
      await waitFor(
        'the strategy caught up',
        () =>
          readDb(db, (d) => {
            const last = (d.prepare('SELECT MAX(seq) AS s FROM events').get() as { s: number }).s;
            return (d.prepare("SELECT seq FROM cursors WHERE consumer = 'strategy:counting'").get() as { seq: number } | undefined)?.seq === last;
          }),
        20_000,
      );
      await new Promise((r) => setTimeout(r, 2 * POLL_S * 1000));
      const rows = events(db);
      expect(ofRebalance(rows, rb.id).map((e) => e.type)).toEqual(['rebalance.announced']);
      const seen = readDb(db, (d) => JSON.parse((d.prepare("SELECT value FROM strategy_state WHERE strategy = 'counting' AND key = 'seen'").get() as { value: string }).value) as string[]);
      expect(seen).toContain(ofRebalance(rows, rb.id)[0]!.id);
      expect(new Set(seen).size).toBe(seen.length);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect(await daemon.exited).toBe(0);
    expect(readDb(db, (d) => d.pragma('integrity_check', { simple: true }))).toBe('ok');
  });

  it('refuses a bad config with a message naming the key and the file, and exits non-zero', async () => {
    const db = tempDbPath();
    const config = writeConfig(db, { baseUrl: sb.baseUrl, intervls: { composition: 5 }, driftThreshold: 2 });
    const d = spawnDaemon(['--config', config], {});
    expect(await d.exited).not.toBe(0);
    expect(d.output()).toContain(config);
    expect(d.output()).toContain('unknown key "intervls"');
    expect(d.output()).toContain('driftThreshold');
  });

  it('refuses a database it cannot open or use, with exit 78 (a human must act) and no lock left', async () => {
    const dir = dirname(tempDbPath());
    const notSqlite = join(dir, 'garbage.db');
    writeFileSync(notSqlite, 'this is not an SQLite file, just some text that is long enough to have a header'.repeat(20));
    const cases: [string, RegExp][] = [
      [dir, /indexbot-db-\w+ is a directory, not a database file; pass --db a file/],
      [notSqlite, /garbage\.db is not a database file \(not SQLite\); pass --db an indexbot database, or a new path/],
    ];
    for (const [db, message] of cases) {
      const d = spawnDaemon(['--config', writeConfig(join(dir, 'x.db'), { baseUrl: sb.baseUrl, db })], { INDEXBOT_API_KEY: sb.keys.premium });
      expect(await d.exited).toBe(78);
      expect(d.output()).toMatch(message);
      expect(d.output()).toContain('[STORE_UNAVAILABLE]');
      // A directory is refused before a lock is made beside it; a file, once its lock is let go.
      if (db === dir) expect(existsSync(`${db}.lock`)).toBe(false);
      else expect(lockIsFree(db)).toBe(true);
    }
  });

  it('refuses an unknown index', async () => {
    const db = tempDbPath();
    const config = writeConfig(db, { baseUrl: sb.baseUrl, db, indexes: ['nosuch'] });
    const d = spawnDaemon(['--config', config], { INDEXBOT_API_KEY: sb.keys.premium });
    expect(await d.exited).not.toBe(0);
    expect(d.output()).toMatch(/unknown index "nosuch"; the server lists sindex/);
    expect(lockIsFree(db)).toBe(true);
  });
});
