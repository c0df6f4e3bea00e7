import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../src/api/index.ts';
import { type Config, permissionWarnings } from '../../src/config/index.ts';
import { StoreError } from '../../src/core/index.ts';
import { ingest } from '../../src/poller/index.ts';
import { MIGRATIONS, RunLock, SCHEMA_VERSION, SnapshotStore } from '../../src/store/index.ts';
import { instrumentLabel } from '../../src/strategy/index.ts';
import { caught } from '../helpers/caught.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

/** Whether this process may run a child as nobody (it is root) that can load this checkout. */
function nobodyReadsThisCheckout(): boolean {
  if (process.getuid?.() !== 0) return false;
  const fs = 'const fs = require("node:fs"); fs.accessSync(process.argv[1], fs.constants.R_OK)';
  return spawnSync(process.execPath, ['-e', fs, join(process.cwd(), 'src', 'store', 'index.ts')], { uid: 65534, gid: 65534 }).status === 0;
}

const composition = (asOf: string, weight = 0.5) => ({
  index_id: 'sindex',
  as_of: asOf,
  rebalance_id: 'rb_1',
  constituents: [
    { address: 'A', symbol: 'AAA', weight, target_weight: 0.5, price_usd: 1 },
    { address: 'B', symbol: 'BBB', weight: 1 - weight, target_weight: 0.5, price_usd: 2 },
  ],
});
const snap = (value: unknown): Snapshot<'composition'> => ({ kind: 'composition', raw: value, requestId: 'r', value: value as never });

describe('SnapshotStore', () => {
  it('opens with WAL, foreign keys and the current schema', () => {
    const path = tempDbPath();
    const store = SnapshotStore.open(path);
    store.close();
    const db = new Database(path);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    db.close();
  });

  it('migrates a file of an older schema and keeps its data', () => {
    const path = tempDbPath();
    const old = new Database(path);
    old.exec(MIGRATIONS[0]!.sql);
    old.pragma('user_version = 1');
    old.prepare("INSERT INTO events (id, type, index_id, occurred_at, detected_at, payload) VALUES ('e1', 'rebalance.announced', 'sindex', 1, 2, '{}')").run();
    old.close();
    const store = SnapshotStore.open(path);
    expect(store.schemaVersion).toBe(SCHEMA_VERSION);
    expect(store.eventsAfter(0).map((e) => e.id)).toEqual(['e1']);
    store.setRuntime('k', { a: 1 }, 5);
    expect(store.runtime('k')).toEqual({ value: { a: 1 }, updatedAt: 5 });
    store.close();
  });

  it('refuses a file with a newer schema, with a clear message', () => {
    const path = tempDbPath();
    SnapshotStore.open(path).close();
    const db = new Database(path);
    db.pragma('user_version = 99');
    db.close();
    const err = caught<StoreError>(() => SnapshotStore.open(path));
    expect(err).toBeInstanceOf(StoreError);
    expect(err!.code).toBe('STORE_SCHEMA_NEWER');
    expect(err.message).toContain(`schema version 99, newer than this indexbot knows (${SCHEMA_VERSION})`);
  });

  it('opened read-only (backtests, research), names the cause: no such file, a directory, a file with no indexbot database, a file that is not SQLite', () => {
    const path = tempDbPath();
    const missing = caught<StoreError>(() => SnapshotStore.open(path, { readonly: true }));
    expect(missing.message).toBe(`no database at ${path}: fill one with \`indexbot backfill\` (or \`indexbot run\`), or pass --db`);
    expect(existsSync(path)).toBe(false);
    const directory = caught<StoreError>(() => SnapshotStore.open(dirname(path), { readonly: true }));
    expect(directory.message).toBe(`${dirname(path)} is a directory, not a database file; pass --db a file`);
    writeFileSync(path, '');
    const empty = caught<StoreError>(() => SnapshotStore.open(path, { readonly: true }));
    expect(empty.message).toBe(`${path} holds no indexbot database (an empty file); fill one with \`indexbot backfill\`, or pass --db`);
    writeFileSync(path, 'not SQLite at all, but long enough to have a header '.repeat(20));
    const notSqlite = caught<StoreError>(() => SnapshotStore.open(path, { readonly: true }));
    expect(notSqlite.message).toBe(`${path} is not a database file (not SQLite); pass --db an indexbot database, or a new path`);
    for (const e of [missing, directory, empty, notSqlite]) expect(e.code).toBe('STORE_UNAVAILABLE');
  });

  it('does not store an identical snapshot twice', () => {
    const store = SnapshotStore.open(tempDbPath());
    const c = composition('2026-11-22T10:00:00.000Z');
    expect(ingest(store, snap(c), 'sindex', 1, 0.02).outcome).toBe('stored');
    expect(ingest(store, snap(structuredClone(c)), 'sindex', 2, 0.02).outcome).toBe('unchanged');
    expect(ingest(store, snap(composition('2026-11-22T10:01:00.000Z')), 'sindex', 3, 0.02).outcome).toBe('stored');
    expect(store.snapshotCounts()).toEqual([{ endpoint: 'composition', status: 'accepted', count: 2 }]);
    store.close();
  });

  it('keeps the raw JSON as received and the composition as rows, queryable as of a time', () => {
    const store = SnapshotStore.open(tempDbPath());
    const early = composition('2026-11-22T10:00:00.000Z', 0.4);
    const late = composition('2026-11-22T11:00:00.000Z', 0.6);
    ingest(store, snap(early), 'sindex', 1, 0.02);
    ingest(store, snap(late), 'sindex', 2, 0.02);
    expect(JSON.parse(store.snapshotRaw(1)!)).toEqual(early);
    const at = (iso: string) => store.compositionAt('sindex', Date.parse(iso));
    expect(at('2026-11-22T09:59:59.999Z')).toBeUndefined();
    expect(at('2026-11-22T10:30:00.000Z')!.constituents.find((c) => c.symbol === 'AAA')!.weight).toBe(0.4);
    expect(at('2026-11-22T11:00:00.000Z')).toMatchObject({ asOf: Date.parse(late.as_of) });
    expect(
      at('2026-11-22T11:00:00.000Z')!
        .constituents.map((c) => c.address)
        .sort(),
    ).toEqual(['A', 'B']);
    store.close();
  });

  it("gives a token's price from the latest composition listing it, never one stored as of a later time", () => {
    const store = SnapshotStore.open(tempDbPath());
    const priced = (asOf: string, a: number, withB = true) => ({
      ...composition(asOf),
      constituents: [
        { address: 'A', symbol: 'AAA', weight: withB ? 0.5 : 1, target_weight: 0.5, price_usd: a },
        ...(withB ? [{ address: 'B', symbol: 'BBB', weight: 0.5, target_weight: 0.5, price_usd: 7 }] : []),
      ],
    });
    store.upsertIndex({ id: 'sindex', name: 'S', status: 'active' } as never, 0);
    ingest(store, snap(priced('2026-11-22T10:00:00.000Z', 1)), 'sindex', 1, 0.02);
    ingest(store, snap(priced('2026-11-22T11:00:00.000Z', 2, false)), 'sindex', 2, 0.02);
    ingest(store, snap(priced('2026-11-22T12:00:00.000Z', 3, false)), 'sindex', 3, 0.02);
    const price = (address: string, iso: string) => store.tokenPriceAt(address, Date.parse(iso));
    expect(price('A', '2026-11-22T09:00:00.000Z')).toBeUndefined();
    expect(price('A', '2026-11-22T11:30:00.000Z')).toEqual({ priceUsd: 2, asOf: Date.parse('2026-11-22T11:00:00.000Z') });
    expect(price('A', '2026-11-22T13:00:00.000Z')!.priceUsd).toBe(3);
    // Dropped from the index: its last listed price stays, so a position can still be valued and sold.
    expect(price('B', '2026-11-22T13:00:00.000Z')).toEqual({ priceUsd: 7, asOf: Date.parse('2026-11-22T10:00:00.000Z') });
    expect(price('C', '2026-11-22T13:00:00.000Z')).toBeUndefined();
    store.close();
  });

  it('stores a payload that failed validation as rejected, with no rows and no events', () => {
    const store = SnapshotStore.open(tempDbPath());
    const bad: Snapshot<'composition'> = { kind: 'composition', raw: { broken: true }, requestId: 'r', error: new (class extends Error {})('bad') as never };
    expect(ingest(store, bad, 'sindex', 1, 0.02).outcome).toBe('rejected');
    expect(store.snapshotCounts()).toEqual([{ endpoint: 'composition', status: 'rejected', count: 1 }]);
    expect(store.compositionAt('sindex')).toBeUndefined();
    expect(store.lastEventSeq()).toBe(0);
    store.close();
  });

  it('rolls back everything a failed poll wrote', () => {
    const store = SnapshotStore.open(tempDbPath());
    expect(() =>
      store.transaction(() => {
        const id = store.insertSnapshot({ endpoint: 'composition', indexId: 'sindex', fetchedAt: 1, asOf: 1, hash: 'h', raw: '{}', status: 'accepted' });
        store.insertComposition(id, composition('2026-11-22T10:00:00.000Z') as never);
        store.appendEvents([{ id: 'x', type: 'rebalance.announced', indexId: 'sindex', occurredAt: 1, detectedAt: 1, payload: {} as never }]);
        throw new Error('disk full');
      }),
    ).toThrow('disk full');
    expect(store.snapshotCounts()).toEqual([]);
    expect(store.compositionAt('sindex')).toBeUndefined();
    expect(store.lastEventSeq()).toBe(0);
    store.close();
  });

  it("forgets the token ids a rolled-back transaction gave out: no foreign-key failure, no token at another token's row", () => {
    const store = SnapshotStore.open(tempDbPath());
    const stored = (asOf: string, constituents: { address: string; symbol: string }[]) => {
      const id = store.insertSnapshot({ endpoint: 'composition', indexId: 'sindex', fetchedAt: Date.parse(asOf), asOf: Date.parse(asOf), hash: asOf, raw: '{}', status: 'accepted' });
      const c = { ...composition(asOf), constituents: constituents.map((k) => ({ ...k, weight: 0.5, target_weight: 0.5, price_usd: 1 })) };
      store.insertComposition(id, c as never);
    };
    store.transaction(() => stored('2026-11-22T09:00:00.000Z', [{ address: 'A', symbol: 'AAA' }]));
    expect(() =>
      store.transaction(() => {
        stored('2026-11-22T10:00:00.000Z', [{ address: 'NEW', symbol: 'NEWT' }]);
        throw new Error('disk full');
      }),
    ).toThrow('disk full');
    // Without AUTOINCREMENT the id NEW had is free again: the next new token takes it.
    store.transaction(() => stored('2026-11-22T11:00:00.000Z', [{ address: 'OTHER', symbol: 'OTH' }]));
    store.transaction(() => stored('2026-11-22T12:00:00.000Z', [{ address: 'NEW', symbol: 'NEWT' }]));
    expect(store.compositionAt('sindex')!.constituents.map((k) => [k.address, k.symbol])).toEqual([['NEW', 'NEWT']]);
    // And a rolled-back new token, polled again with nothing in between, is stored (no foreign-key failure).
    expect(() =>
      store.transaction(() => {
        stored('2026-11-22T13:00:00.000Z', [{ address: 'LATE', symbol: 'LAT' }]);
        throw new Error('busy');
      }),
    ).toThrow('busy');
    store.transaction(() => stored('2026-11-22T14:00:00.000Z', [{ address: 'LATE', symbol: 'LAT' }]));
    expect(store.compositionAt('sindex')!.constituents.map((k) => k.symbol)).toEqual(['LAT']);
    expect(store.integrityCheck()).toBe('ok');
    store.close();
  });

  it('appends an event id once, whichever path sees it first', () => {
    const store = SnapshotStore.open(tempDbPath());
    const e = { id: 'rebalance.completed:sindex:rb_1', type: 'rebalance.completed' as const, indexId: 'sindex', occurredAt: 1, detectedAt: 2, payload: {} as never };
    expect(store.appendEvents([e])).toHaveLength(1);
    expect(store.appendEvents([{ ...e, detectedAt: 3 }])).toHaveLength(0);
    expect(store.eventCounts()).toEqual({ 'rebalance.completed': 1 });
    // The copy takes no number: the next event is 2, so a reader of seqs (an SSE client) sees no gap (found by trial 22).
    expect(store.appendEvents([{ ...e, id: 'rebalance.announced:sindex:rb_2', type: 'rebalance.announced' as never }]).map((x) => x.seq)).toEqual([2]);
    expect(store.lastEventSeq()).toBe(2);
    store.close();
  });

  it('takes the lock, and opens the store, in a directory that does not exist yet', () => {
    const db = join(dirname(tempDbPath()), 'new', 'dir', 'bot.db');
    const lock = RunLock.acquire(db);
    const store = SnapshotStore.open(db);
    expect(readFileSync(`${db}.lock.pid`, 'utf8')).toBe(String(process.pid));
    store.close();
    lock.release();
    expect(existsSync(`${db}.lock.pid`)).toBe(false);
  });

  it('refuses a second run on the same file naming the holder, and gives the lock up on release only', () => {
    const path = tempDbPath();
    const lock = RunLock.acquire(path);
    const refused = caught<StoreError>(() => RunLock.acquire(path));
    expect(refused).toMatchObject({ code: 'STORE_LOCKED' });
    expect(refused.message).toBe(`another indexbot (pid ${process.pid}) is already running on ${path}; stop it first or use another --db`);
    // A pid file edited by hand changes nothing: the lock is the kernel's, not the file's.
    writeFileSync(`${path}.lock.pid`, '999999');
    expect(() => RunLock.acquire(path)).toThrow(/already running/);
    lock.release();
    lock.release();
    const next = RunLock.acquire(path);
    expect(() => RunLock.acquire(path)).toThrow(/already running/);
    next.release();
  });

  it('is one lock for one file, whatever name it is reached by (trial 32: a symlink ran a second daemon beside the first)', () => {
    const path = tempDbPath();
    SnapshotStore.open(path).close();
    const alias = join(mkdtempSync(join(tmpdir(), 'indexbot-alias-')), 'alias.db');
    symlinkSync(path, alias);
    const lock = RunLock.acquire(path);
    expect(caught<StoreError>(() => RunLock.acquire(alias))).toMatchObject({ code: 'STORE_LOCKED', message: expect.stringContaining(`pid ${process.pid}`) });
    expect(RunLock.holder(alias)).toBe(process.pid);
    lock.release();
    RunLock.acquire(alias).release();
  });

  it('a pid file it cannot write is a store error (exit 78), and one it cannot remove leaves the stop clean (trial 32: exit 70, restarted for ever)', () => {
    const path = tempDbPath();
    // A directory where the file would go fails the write as a read-only directory does, whoever runs the test.
    mkdirSync(`${path}.lock.pid.${process.pid}`);
    const refused = caught<StoreError>(() => RunLock.acquire(path));
    expect(refused).toBeInstanceOf(StoreError);
    expect(refused).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(refused.message).toMatch(/^cannot write .*\.lock\.pid: .*\(EISDIR\); the directory of .* must be writable$/);
    // The lock was given back with the failure.
    rmdirSync(`${path}.lock.pid.${process.pid}`);
    const lock = RunLock.acquire(path);
    rmSync(`${path}.lock.pid`);
    mkdirSync(`${path}.lock.pid`);
    writeFileSync(join(`${path}.lock.pid`, 'x'), '');
    expect(() => lock.release()).not.toThrow();
    // Released all the same: the lock is free once the pid file's place is.
    rmSync(`${path}.lock.pid`, { recursive: true });
    RunLock.acquire(path).release();
  });

  it("makes its file readable by its owner alone, and its journal files with it (trial 32: 0644, holding a wallet's tokens)", () => {
    const path = tempDbPath();
    const store = SnapshotStore.open(path);
    store.setRuntime('x', 1, 1);
    for (const f of [path, `${path}-wal`]) expect((statSync(f).mode & 0o777).toString(8), f).toBe('600');
    store.close();
    chmodSync(path, 0o644);
    const warnings = permissionWarnings({ db: path } as Config);
    expect(warnings).toEqual([`the database ${path} is readable by group or others; chmod 600 it`]);
  });

  // Root writes whatever the mode: the files are given to nobody, who then opens them, with this checkout's code (which a clone in a private folder keeps from nobody).
  it.runIf(nobodyReadsThisCheckout())('refuses a database or -shm file its user may not write, naming it (trial 35: exit 75 for ever, no file named)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-readonly-'));
    const path = join(dir, 'bot.db');
    const store = SnapshotStore.open(path);
    store.setRuntime('x', 1, 1);
    store.close();
    // As a failed start leaves it: the -shm read-only too.
    writeFileSync(`${path}-shm`, '');
    for (const f of [dir, path, `${path}-shm`]) chownSync(f, 65534, 65534);
    const open = () =>
      spawnSync(
        process.execPath,
        [
          '--import',
          './scripts/register-source-imports.mjs',
          '--input-type=module',
          '-e',
          `import { SnapshotStore } from './src/store/index.ts'; try { SnapshotStore.open(${JSON.stringify(path)}).close(); console.log('opened'); } catch (e) { console.log(e.code + ' ' + e.message); }`,
        ],
        { uid: 65534, gid: 65534, encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' },
      ).stdout.trim();
    chmodSync(path, 0o444);
    expect(open()).toBe(
      `STORE_UNAVAILABLE ${path} cannot be written (permission denied, EACCES): the bot writes its database and the -wal and -shm files beside it; give them to the user it runs as (chown), or make them writable`,
    );
    chmodSync(path, 0o600);
    chmodSync(`${path}-shm`, 0o444);
    expect(open()).toMatch(new RegExp(`^STORE_UNAVAILABLE ${path.replaceAll('.', '\\.')}-shm cannot be written \\(permission denied, EACCES\\)`));
    chmodSync(`${path}-shm`, 0o600);
    expect(open()).toBe('opened');
  });

  it('refuses a lock file that is not one, saying what to do', () => {
    const path = tempDbPath();
    writeFileSync(`${path}.lock`, '12345');
    expect(caught<StoreError>(() => RunLock.acquire(path)).message).toBe(`${path}.lock is not indexbot's lock (an older indexbot's?); if no indexbot runs on ${path}, delete it`);
  });

  it('keeps the wallet session tokens (TokenStore)', () => {
    const store = SnapshotStore.open(tempDbPath());
    const t = { baseUrl: 'http://x/v1', wallet: 'W', accessToken: 'a', refreshToken: 'r', accessExpiresAt: 5, refreshExpiresAt: 9 };
    store.save(t);
    expect(store.load('http://x/v1')).toEqual(t);
    store.clear('http://x/v1');
    expect(store.load('http://x/v1')).toBeUndefined();
    store.close();
  });
});

describe('tokenPriceAt falls back to the token list', () => {
  it('prices a token no composition holds from the token list, only from when it was observed', () => {
    const store = SnapshotStore.open(tempDbPath());
    const address = 'NewTok'.padEnd(44, '1');
    expect(store.tokenPriceAt(address, 2_000)).toBeUndefined();
    store.upsertToken({ address, symbol: 'NEW', name: 'New', decimals: 6, price_usd: 0.25 } as never, 1_000);
    expect(store.tokenPriceAt(address, 999)).toBeUndefined();
    expect(store.tokenPriceAt(address, 1_000)).toEqual({ priceUsd: 0.25, asOf: 1_000 });
    store.close();
  });

  it("names a token no composition holds by the token list's symbol: a runner fed by the stream labelled its fills with the address", () => {
    const store = SnapshotStore.open(tempDbPath());
    const address = 'ListOnly'.padEnd(44, '1');
    expect(store.tokenSymbol(address)).toBeUndefined();
    store.upsertToken({ address, symbol: 'AURY', name: 'Aury', decimals: 6, price_usd: 0.25 } as never, 1_000);
    expect(store.tokenSymbol(address)).toBe('AURY');
    expect(instrumentLabel(store, `token:${address}`)).toBe('AURY');
    // A composition's symbol, where one names the token, comes first: the list may lag a rename.
    const c = composition('2026-11-22T10:00:00.000Z');
    ingest(store, snap({ ...c, constituents: [{ ...c.constituents[0]!, address, symbol: 'AURY2', weight: 1, target_weight: 1 }] }), 'sindex', 2_000, 0.02);
    expect(store.tokenSymbol(address)).toBe('AURY2');
    store.close();
  });
});

describe('rebalanceTransitions', () => {
  const rebalance = (id: string, indexId: string, announced: number, effective: number, status: 'announced' | 'completed' | 'cancelled') => ({
    id,
    index_id: indexId,
    status,
    announced_at: new Date(announced).toISOString(),
    effective_at: new Date(effective).toISOString(),
    completed_at: status === 'completed' ? new Date(effective).toISOString() : null,
    reason: 'scheduled',
    changes: [{ address: 'A', symbol: 'AAA', action: 'increase', old_weight: 0.5, new_weight: 0.6 }],
  });

  it('gives the status changes in (from, to] of the named indexes, in time order, each with its record, and counts the same', () => {
    const store = SnapshotStore.open(':memory:');
    store.upsertRebalance(rebalance('rb_a', 'one', 1_000, 5_000, 'completed') as never, 10_000);
    store.upsertRebalance(rebalance('rb_b', 'two', 2_000, 3_000, 'completed') as never, 10_000);
    store.upsertRebalance(rebalance('rb_c', 'other', 1_500, 4_000, 'completed') as never, 10_000);
    const seen = (from: number, to: number) => [...store.rebalanceTransitions(['one', 'two'], from, to)].map((t) => `${t.record.id} ${t.status} ${t.at} ${t.record.index_id}`);
    expect(seen(Number.MIN_SAFE_INTEGER, 10_000)).toEqual(['rb_a announced 1000 one', 'rb_b announced 2000 two', 'rb_b completed 3000 two', 'rb_a completed 5000 one']);
    expect(seen(1_000, 3_000)).toEqual(['rb_b announced 2000 two', 'rb_b completed 3000 two']);
    expect(store.rebalanceTransitionCount(['one', 'two'], 1_000, 3_000)).toBe(2);
    // Left part-way (a replay whose handler threw), the query runs again from the start.
    const early = store.rebalanceTransitions(['one', 'two'], Number.MIN_SAFE_INTEGER, 10_000);
    early.next();
    early.return(undefined);
    expect(seen(Number.MIN_SAFE_INTEGER, 10_000)).toHaveLength(4);
    store.close();
  });

  it('dates each status of a rebalancing record by its own times, never later than it was seen, whether a poll or a backfill saw it first', () => {
    const store = SnapshotStore.open(':memory:');
    const seen = () => [...store.rebalanceTransitions(['one'], Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)].map((t) => `${t.record.id} ${t.status} ${t.at}`);
    // A daemon's first poll, long after the record finished (the daemon run before any backfill):
    // its end was dated at that poll, after the range of every backtest.
    store.upsertRebalance(rebalance('rb_old', 'one', 1_000, 5_000, 'completed') as never, 1_000_000);
    // Watched as it changed: announced, then cancelled before it took effect.
    store.upsertRebalance(rebalance('rb_cut', 'one', 2_000, 9_000, 'announced') as never, 2_050);
    store.upsertRebalance(rebalance('rb_cut', 'one', 2_000, 9_000, 'cancelled') as never, 4_200);
    // Found cancelled long after: at effective_at, the latest it can have happened.
    store.upsertRebalance(rebalance('rb_gone', 'one', 3_000, 6_000, 'cancelled') as never, 1_000_000);
    // The server's clock ahead of ours: never dated after it was seen.
    store.upsertRebalance(rebalance('rb_skew', 'one', 7_000, 8_000, 'completed') as never, 7_900);
    // A backfill of what the polls saw changes nothing.
    store.upsertRebalance(rebalance('rb_old', 'one', 1_000, 5_000, 'completed') as never, 2_000_000);
    expect(seen()).toEqual([
      'rb_old announced 1000',
      'rb_cut announced 2000',
      'rb_gone announced 3000',
      'rb_cut cancelled 4200',
      'rb_old completed 5000',
      'rb_gone cancelled 6000',
      'rb_skew announced 7000',
      'rb_skew completed 7900',
    ]);
    store.close();
  });
});
