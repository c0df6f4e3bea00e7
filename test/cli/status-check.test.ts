import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { SnapshotStore } from '../../src/store/index.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const check = (db: string, maxAge: number) => spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--check', '--max-age-s', String(maxAge), '--db', db], { encoding: 'utf8' });

describe('indexbot status --check', () => {
  it('exits 0 while the heartbeat is fresh and 1 once it is stale', () => {
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    store.recordJobRun('composition:sindex', Date.now() - 3_600_000);
    store.recordJobRun('rebalancing:sindex', Date.now() - 120_000);
    store.close();
    const stale = check(db, 60);
    expect(stale.status).toBe(1);
    expect(stale.stdout).toMatch(/^stale: last successful poll 1[12]\ds ago \(limit 60s\)/);
    const fresh = check(db, 300);
    expect(fresh.status).toBe(0);
    expect(fresh.stdout).toMatch(/^ok: last successful poll 1[12]\ds ago/);
  });

  it('is stale before the first successful poll', () => {
    const db = tempDbPath();
    SnapshotStore.open(db).close();
    const res = check(db, 300);
    expect(res.status).toBe(1);
    expect(res.stdout).toContain('stale: no successful poll yet');
  });
});
