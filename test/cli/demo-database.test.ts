import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { NewEvent } from '../../src/detect/index.ts';
import { RunLock, SnapshotStore } from '../../src/store/index.ts';
import { runCli, waitFor } from '../helpers/daemon.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const demo = (db: string, ...more: string[]) =>
  spawnSync(process.execPath, ['bin/indexbot.js', 'demo', '--db', db, '--duration-s', '2', '--speed', '2880', ...more], { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' });

const event: NewEvent = {
  id: 'rebalance.announced:sindex:rb_1',
  type: 'rebalance.announced',
  indexId: 'sindex',
  occurredAt: 1,
  detectedAt: 1,
  payload: { rebalanceId: 'rb_1', announcedAt: 1, effectiveAt: 2, reason: 'manual', changes: [] },
};

/** A database some bot keeps: one event in its log. */
function botDatabase(): string {
  const db = tempDbPath();
  const store = SnapshotStore.open(db);
  store.appendEvents([event]);
  store.close();
  return db;
}

const eventCount = (db: string) => {
  const store = SnapshotStore.open(db, { readonly: true });
  try {
    return store.lastEventSeq();
  } finally {
    store.close();
  }
};

describe('demo --db', () => {
  it('refuses a database it did not make, and deletes nothing', () => {
    const db = botDatabase();
    const run = demo(db);
    expect(run.status).toBe(64);
    expect(run.stderr.trim().split('\n')).toEqual([
      `indexbot: --db ${db}: not a database the demo made, and the demo starts its database afresh (deleting it); name a new file, or leave --db out for data/demo.db [USAGE_INVALID]`,
    ]);
    // Refused before anything starts: no sandbox announced.
    expect(run.stdout).toBe('');
    expect(eventCount(db)).toBe(1);
  });

  it('starts afresh over a database a demo made, but never while a running bot holds it', () => {
    const db = tempDbPath();
    expect(demo(db).status).toBe(0);
    const store = SnapshotStore.open(db);
    store.appendEvents([{ ...event, id: 'rebalance.announced:sindex:left-from-before' }]);
    store.close();
    const before = eventCount(db);
    const lock = RunLock.acquire(db);
    try {
      const run = demo(db);
      expect(run.status).toBe(78);
      expect(run.stderr).toMatch(/^indexbot: another indexbot \(pid \d+\) is already running on .* \[STORE_LOCKED\]\n$/);
      expect(eventCount(db)).toBe(before);
    } finally {
      lock.release();
    }
    expect(demo(db).status).toBe(0);
    const reopened = SnapshotStore.open(db, { readonly: true });
    try {
      expect(reopened.eventsAfter(0, 10_000).some((e) => e.id.endsWith('left-from-before'))).toBe(false);
    } finally {
      reopened.close();
    }
  });

  it('keeps its last database when --http names a port in use: the port is taken before the database is started afresh (trial 30)', async () => {
    const db = tempDbPath();
    expect(demo(db).status).toBe(0);
    // An event of its own: whether two seconds of demo detect one depends on the hour the test runs at (none on 2026-12-07 at 12:00 UTC).
    const store = SnapshotStore.open(db);
    store.appendEvents([{ ...event, id: 'rebalance.announced:sindex:left-from-before' }]);
    store.close();
    const before = eventCount(db);
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    try {
      const { port } = taken.address() as AddressInfo;
      const run = demo(db, '--http', `127.0.0.1:${port}`);
      expect(run.status).toBe(64);
      expect(run.stderr).toContain(`127.0.0.1:${port} is already in use`);
      expect(eventCount(db)).toBe(before);
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it('gives up a database it made once a backfill (or a bot) has written to it', async () => {
    const db = tempDbPath();
    expect(demo(db).status).toBe(0);
    const sandbox = await testSandbox();
    try {
      const filled = await runCli(['backfill', '--db', db, '--base-url', sandbox.baseUrl, '--from', '2026-11-18', '--to', '2026-11-19', '--indexes', 'sindex'], {
        INDEXBOT_API_KEY: sandbox.keys.premium,
      });
      expect(filled.status, filled.stderr).toBe(0);
    } finally {
      await sandbox.close();
    }
    const before = eventCount(db);
    const again = demo(db);
    expect(again.status).toBe(64);
    expect(again.stderr).toContain('not a database the demo made');
    expect(eventCount(db)).toBe(before);
  });
});

describe('demo in a project with no strategies of its own (trial 24: exit 78, strategies directory strategies does not exist)', () => {
  const bin = new URL('../../bin/indexbot.js', import.meta.url).pathname;
  const inFreshProject = (args: string[]) => {
    const cwd = mkdtempSync(join(tmpdir(), 'indexbot-fresh-project-'));
    return spawnSync(process.execPath, [bin, 'demo', '--duration-s', '2', '--speed', '2880', ...args], { cwd, encoding: 'utf8', timeout: 60_000 });
  };

  it("runs the package's example strategies, and says so", () => {
    const run = inFreshProject([]);
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[1]).toBe("No ./strategies here: running the package's example strategies (`npx indexbot init` makes a project with one of your own).");
    expect(lines[2]).toMatch(/ with strategies drift-reversion, rebalance-alert, rebalance-front-run; /);
  });

  it('says an empty --strategies directory runs no strategy (trial 25: "with strategies ;")', () => {
    const empty = mkdtempSync(join(tmpdir(), 'indexbot-no-strategies-'));
    const run = inFreshProject(['--strategies', empty]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^Following [a-z, ]+ with no strategy \\(none in ${empty}\\); `, 'm'));
  });

  it('still refuses a --strategies directory named and missing', () => {
    const run = inFreshProject(['--strategies', 'mine']);
    expect(run.status).toBe(78);
    expect(run.stderr).toContain('strategies directory mine does not exist [CONFIG_INVALID]');
  });
});

describe('demo --watch', () => {
  it('says a refused reload once, in its own words: no JSON log line beside it (trial 24)', async () => {
    // A project of the user's, with indexbot (this checkout) installed.
    const cwd = mkdtempSync(join(tmpdir(), 'indexbot-demo-watch-'));
    mkdirSync(join(cwd, 'node_modules'));
    symlinkSync(resolve('.'), join(cwd, 'node_modules', 'indexbot'), 'dir');
    writeFileSync(join(cwd, 'package.json'), '{"type":"module"}');
    mkdirSync(join(cwd, 'strategies'));
    const file = join(cwd, 'strategies', 'quiet.ts');
    const source = "import { defineStrategy } from 'indexbot';\nexport default defineStrategy({ name: 'quiet', on: { 'performance.updated': () => {} } });\n";
    writeFileSync(file, source);
    const bin = new URL('../../bin/indexbot.js', import.meta.url).pathname;
    const child = spawn(process.execPath, [bin, 'demo', '--watch', '--duration-s', '20', '--speed', '2880'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      await waitFor('the demo running', () => stdout.includes('with strategies quiet;'), 30_000);
      writeFileSync(file, source.replace('} });', '} ;'));
      await waitFor('the refused reload', () => stdout.includes('reload quiet: kept the running version: '), 15_000);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(stdout.match(/reload quiet: kept the running version/g)).toHaveLength(1);
    expect(stderr).not.toContain('"component":"watch"');
  }, 60_000);
});
