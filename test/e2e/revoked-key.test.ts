import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, demoKey } from '../../src/sandbox/index.ts';
import { lockIsFree, readDb, sandboxConfig, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { control, testSandbox } from '../helpers/sandbox.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const key = demoKey('premium', { name: 'revoked-while-running' });
let sb: Sandbox;
beforeAll(async () => {
  sb = await testSandbox({ speed: 1, startTime: Date.now(), rateWindowMs: 10_000, apiKeys: [key] });
});
afterAll(() => sb.close());

// Trial 25: a key revoked while the daemon ran was retried for ever (a 401 per job every few
// seconds, exit never), so systemd, which restarts on anything but 64 and 78, never told anyone.
describe('a credential revoked while the daemon runs', () => {
  it('stops the daemon with one line naming it and exit 78, its lock released, the key never printed', async () => {
    const db = tempDbPath();
    const config = sandboxConfig(sb, db, { indexes: ['dindex'], intervals: { rebalancing: 1, composition: 1, performance: 2, indexes: 30, tokens: 30 }, shutdownGraceMs: 3_000 });
    const daemon = spawnDaemon(['--config', config], { INDEXBOT_API_KEY: key.key });
    await waitFor('first polls', () => readDb(db, (d) => (d.prepare('SELECT COUNT(*) AS n FROM poll_jobs WHERE last_success_at IS NOT NULL').get() as { n: number }).n >= 3), 30_000);
    const revokedAt = Date.now();
    await control(sb, '/revoke-key', { key: key.key });
    const code = await Promise.race([daemon.exited, new Promise<'running'>((r) => setTimeout(() => r('running'), 30_000))]);
    if (code === 'running') daemon.child.kill('SIGKILL');
    expect(code).toBe(78);
    // Within a few of its 1 s polls, not a backoff's minutes.
    expect(Date.now() - revokedAt).toBeLessThan(20_000);
    const out = daemon.output();
    expect(out).toMatch(
      /^indexbot: the server has refused the credential on every poll since \S+ \(\d+ polls, the last: .*HTTP 401.*\): revoked or expired\? set a valid INDEXBOT_API_KEY \(or run indexbot login again\) and restart \[API_UNAUTHORIZED\]$/m,
    );
    expect(out).toContain('"msg":"indexbot stopped"');
    expect(out).not.toContain(key.key);
    expect(lockIsFree(db)).toBe(true);
  }, 60_000);
});

// Trial 33: a start refused after it made its database left an empty file behind, which `status` then read as a bot's.
describe('a start refused at once', () => {
  it('removes the database it made and found nothing for; keeps one that was there', async () => {
    const db = tempDbPath();
    const config = sandboxConfig(sb, db, { indexes: ['dindex'] });
    const refused = spawnDaemon(['--config', config], { INDEXBOT_API_KEY: 'sk_live_notakey00000000' });
    expect(await refused.exited).toBe(78);
    expect(refused.output()).toContain('[API_UNAUTHORIZED]');
    expect(existsSync(db)).toBe(false);
    expect(existsSync(`${db}-wal`)).toBe(false);
    // A database that was there stays, as it was.
    SnapshotStore.open(db).close();
    const again = spawnDaemon(['--config', config], { INDEXBOT_API_KEY: 'sk_live_notakey00000000' });
    expect(await again.exited).toBe(78);
    expect(existsSync(db)).toBe(true);
    expect(lockIsFree(db)).toBe(true);
  }, 60_000);
});
