import { execFile, spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import { collectStatus } from '../../src/cli/status-command.ts';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HTTP_FACE, type HttpFaceRecord, RunLock, SnapshotStore } from '../../src/store/index.ts';
import { tempDbPath } from '../helpers/temp-db.ts';
import { buildCache } from '../helpers/backtest-cache.ts';

const check = (db: string, maxAge: number) => spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--check', '--max-age-s', String(maxAge), '--db', db], { encoding: 'utf8' });

describe('indexbot status --check', () => {
  it('exits 0 while the heartbeat is fresh and 1 once it is stale', () => {
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    const lastPoll = Date.now() - 120_000;
    store.recordJobRun('composition:sindex', Date.now() - 3_600_000);
    store.recordJobRun('rebalancing:sindex', lastPoll);
    store.close();
    // A running daemon holds the lock: this process, here.
    const lock = RunLock.acquire(db);
    // The age printed is the newest poll's, in whole seconds as of each check's own start.
    const ageWithin = (out: string, before: number) => {
      const age = Number(/last successful poll (\d+)s ago/.exec(out)?.[1]);
      expect(age).toBeGreaterThanOrEqual(Math.floor((before - lastPoll) / 1000));
      expect(age).toBeLessThanOrEqual(Math.ceil((Date.now() - lastPoll) / 1000));
    };
    let before = Date.now();
    const stale = check(db, 60);
    expect(stale.status).toBe(1);
    expect(stale.stdout).toMatch(/^stale: last successful poll \d+s ago \(limit 60s\)/);
    ageWithin(stale.stdout, before);
    before = Date.now();
    const fresh = check(db, 300);
    expect(fresh.status).toBe(0);
    expect(fresh.stdout).toMatch(/^ok: last successful poll \d+s ago/);
    ageWithin(fresh.stdout, before);
    // Stopped (a bad key's exit 78, which no supervisor restarts): down now, however fresh its last poll (trial 32: "ok" for 300 s).
    lock.release();
    const stopped = check(db, 300);
    expect(stopped.status).toBe(1);
    expect(stopped.stdout).toMatch(new RegExp(`^stale: no indexbot process holds ${db}; last successful poll \\d+s ago\n$`));
  });

  it("takes the running process's http.readyMaxAgeS unless --max-age-s is given: it and /readyz agree (trial 33: ok beside a 503)", () => {
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    store.recordJobRun('rebalancing:sindex', Date.now() - 120_000);
    // As the process records it at its start, with http.readyMaxAgeS 60 in its config.
    store.setRuntime(HTTP_FACE, { pid: process.pid, url: null, token: false, readyMaxAgeS: 60 } satisfies HttpFaceRecord, Date.now());
    store.close();
    const lock = RunLock.acquire(db);
    try {
      const run = (...args: string[]) => spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--check', '--db', db, ...args], { encoding: 'utf8' });
      const taken = run();
      expect(taken.status).toBe(1);
      expect(taken.stdout).toMatch(/^stale: last successful poll \d+s ago \(limit 60s\)\n$/);
      expect(run('--max-age-s', '300').status).toBe(0);
    } finally {
      lock.release();
    }
  });

  it('is stale, exit 1, where there is no database (a fresh volume, a wrong path); with --json, says so as JSON (trial 35: 78, and --json dropped)', () => {
    const missing = join(tempDbPath(), '..', 'none.db');
    const res = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--check', '--db', missing], { encoding: 'utf8' });
    expect(res.status).toBe(1);
    expect(res.stdout).toBe(`stale: no database at ${missing}: no bot has run on it\n`);
    const both = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--check', '--json', '--db', missing], { encoding: 'utf8' });
    expect(both.status).toBe(1);
    expect(JSON.parse(both.stdout)).toEqual({ ok: false, line: `stale: no database at ${missing}: no bot has run on it` });
  });

  it('is stale before the first successful poll', () => {
    const db = tempDbPath();
    SnapshotStore.open(db).close();
    const lock = RunLock.acquire(db);
    const res = check(db, 300);
    lock.release();
    expect(res.status).toBe(1);
    expect(res.stdout).toContain('stale: no successful poll nor event-stream read yet');
  });
});

describe('indexbot status --url of an older daemon', () => {
  it('shows the one history count its status has, instead of failing on the per-interval list it lacks (the review: exit 70)', async () => {
    const status = collectStatus(SnapshotStore.open(buildCache()), Date.now());
    const older = { ...status, indexes: status.indexes.map(({ history: _history, ...i }) => i), rateGates: [], paused: [] };
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(older)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const res = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) =>
        execFile(process.execPath, ['bin/indexbot.js', 'status', '--url', url], { encoding: 'utf8' }, (e, stdout, stderr) => resolve({ status: e ? (e.code as number) : 0, stdout, stderr })),
      );
      expect(res.stderr).toBe('');
      expect(res.stdout).toMatch(/\n {2}x +composition fetched never .* history +120 \(2025-03-01T00:00 \.\. 2025-03-05T23:00\) {2}rebalances 1\n/);
    } finally {
      server.close();
    }
  });
});

describe('indexbot status of the event stream', () => {
  it("says when a runner's last read is too old to stand for its lag, and why its poll jobs are empty; a collector's events not yet published (trial 33)", () => {
    const runnerDb = tempDbPath();
    const runner = SnapshotStore.open(runnerDb);
    runner.setRuntime('eventStreamRead', { stream: 'indexbot:events', group: 'box-2', lag: 0, pending: 0, pid: process.pid }, Date.now() - 45_000);
    runner.close();
    const text = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--db', runnerDb], { encoding: 'utf8' }).stdout;
    expect(text).toMatch(/\n {2}indexbot:events {2}group box-2 {2}lag 0 {2}pending 0 {2}last read (\S+) ago\n {2}lag and pending are as of that read, \1 ago: Redis away, or the runner stuck\n/);
    expect(text).toContain("\nPoll jobs\n  none here: a runner's data comes with the stream, fetched by its collector (composition fetched, above)\n");

    const collectorDb = tempDbPath();
    const collector = SnapshotStore.open(collectorDb);
    collector.appendEvents([1, 2, 3, 4, 5].map((n) => ({ id: `index.listed:i${n}`, type: 'index.listed', indexId: `i${n}`, occurredAt: n, detectedAt: n, payload: {} }) as never));
    collector.setCursor('stream:indexbot:events', 3, Date.now());
    collector.close();
    const published = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--db', collectorDb], { encoding: 'utf8' }).stdout;
    expect(published).toContain('\nEvent stream (a collector)\n  indexbot:events  published through seq 3  unpublished 2 (its runners see none of them until they are)\n');
    const json = JSON.parse(spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--json', '--db', collectorDb], { encoding: 'utf8' }).stdout);
    expect(json.publishing).toEqual({ stream: 'indexbot:events', publishedSeq: 3, unpublished: 2 });
  });
});

describe('indexbot status on a cache filled by backfill alone', () => {
  it('shows per index the history points, their range and the rebalancing records', () => {
    // History points and a rebalancing record, as backfill stores them: no index list, no snapshots.
    const res = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--db', buildCache()], { encoding: 'utf8' });
    expect(res.status, res.stderr).toBe(0);
    const rows = res.stdout.split('Indexes (cache)\n')[1]!.split('\n\n')[0]!.split('\n');
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatch(/^ {2}x +composition fetched never .* history 1h +120 \(2025-03-01T00:00 \.\. 2025-03-05T23:00\) {2}rebalances 1$/);
    expect(rows[1]).toMatch(/^ {2}y +.* history 1h +120 \(2025-03-01T00:00 \.\. 2025-03-05T23:00\) {2}rebalances 0$/);
  });

  it('shows each interval apart and the points missing between its first and last (trial 34: one count over 1h and 1d, holes unseen)', () => {
    const db = buildCache({ skipHours: [40, 50] });
    const store = SnapshotStore.open(db);
    store.transaction(() => store.history.insertPoints('x', '1d', [{ timestamp: '2025-03-01T00:00:00.000Z', nav: 1, constituents: [] }] as never));
    store.close();
    const res = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--db', db], { encoding: 'utf8' });
    const x = res.stdout.split('Indexes (cache)\n')[1]!.split('\n')[0]!;
    expect(x).toMatch(/ history 1d +1 \(2025-03-01T00:00 \.\. 2025-03-01T00:00\) {2}history 1h +109 \(2025-03-01T00:00 \.\. 2025-03-05T23:00, 11 missing\) {2}rebalances 1$/);
    const json = JSON.parse(spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--json', '--db', db], { encoding: 'utf8' }).stdout);
    expect(json.indexes[0].history.map((h: { interval: string; points: number; missing: number }) => [h.interval, h.points, h.missing])).toEqual([
      ['1d', 1, 0],
      ['1h', 109, 11],
    ]);
  });

  it('marks an index the last run did not poll: one dropped from the config ages in the cache with no poll failing', () => {
    const db = buildCache();
    const store = SnapshotStore.open(db);
    const jobs = [
      { name: 'indexes', kind: 'indexes', intervalMs: 60_000 },
      ...['rebalancing', 'composition', 'performance'].map((kind) => ({ name: `${kind}:x`, kind, indexId: 'x', intervalMs: 60_000 })),
    ];
    store.setRuntime('budget', { jobs, requestedPerMin: 4, plannedPerMin: 4, budgetPerMin: 270, stretched: [], fits: true }, Date.now());
    store.close();
    const res = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--db', db], { encoding: 'utf8' });
    const rows = res.stdout.split('Indexes (cache)\n')[1]!.split('\n\n')[0]!.split('\n');
    expect(rows[0]).toMatch(/rebalances 1$/);
    expect(rows[1]).toMatch(/rebalances 0 {2}\(not polled by the last run\)$/);
    const json = JSON.parse(spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--json', '--db', db], { encoding: 'utf8' }).stdout);
    expect(json.indexes.map((i: { indexId: string; polled: boolean | null }) => [i.indexId, i.polled])).toEqual([
      ['x', true],
      ['y', false],
    ]);
  });
});

describe('indexbot status and the daemon (found by a new-user trial: it never said plainly whether one runs)', () => {
  it('says no gate was reported yet, rather than a heading over nothing, when the report came before the first request', () => {
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    store.setRuntime('gates', { gates: [], schedule: [], pid: process.pid }, Date.now());
    store.close();
    const res = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--db', db], { encoding: 'utf8' });
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/\nRate gates \(reported [^)]+\)\n {2}none yet: no request had been sent\n$/);
  });

  it('says which pid holds the database, and that none does once it let go', () => {
    const db = tempDbPath();
    SnapshotStore.open(db).close();
    const status = () => spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--db', db], { encoding: 'utf8' });
    const statusJson = () => JSON.parse(spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--json', '--db', db], { encoding: 'utf8' }).stdout);
    // This process holds the lock as a daemon does.
    const lock = RunLock.acquire(db);
    try {
      expect(status().stdout.split('\n')[1]).toBe(`daemon: running (pid ${process.pid})`);
      expect(statusJson().daemon).toEqual({ pid: process.pid });
    } finally {
      lock.release();
    }
    expect(status().stdout.split('\n')[1]).toBe('daemon: none running on this database');
    expect(statusJson().daemon).toEqual({ pid: null });
  });
});

describe('indexbot status --check on a file it cannot read as a bot’s database', () => {
  // Trial 36: exit 78 and no JSON for --json, where a monitor reads 0 or 1 and parses the object.
  it('exits 1 with the reason, as JSON with --json', () => {
    const other = tempDbPath();
    const db = new Database(other);
    db.exec('CREATE TABLE users (id INTEGER PRIMARY KEY)');
    db.close();
    const json = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--check', '--json', '--db', other], { encoding: 'utf8' });
    expect(json.status, json.stderr).toBe(1);
    const answer = JSON.parse(json.stdout) as { ok: boolean; line: string };
    expect(answer.ok).toBe(false);
    expect(answer.line).toBe(
      `unreadable: ${other} is another program's SQLite database (tables users), not an indexbot database; it was left as it is: pass --db an indexbot database or a new file [STORE_FOREIGN]`,
    );
    const text = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--check', '--db', other], { encoding: 'utf8' });
    expect(text.status).toBe(1);
    expect(text.stdout).toBe(`${answer.line}\n`);
    // Without --check it is the error it is.
    expect(spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--db', other], { encoding: 'utf8' }).status).toBe(78);
  });
});
