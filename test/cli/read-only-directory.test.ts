import { spawnSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SnapshotStore } from '../../src/store/index.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

/**
 * The command, as a process that directory permissions bind. Root ignores them, so as root it
 * runs without the capabilities that let it (util-linux's setpriv). Not as `nobody`: a
 * checkout under a private folder (CI's mktemp -d, mode 700) is out of its reach.
 */
function statusCommand(db: string) {
  const args = ['bin/indexbot.js', 'status', '--db', db];
  if (process.getuid?.() !== 0) return spawnSync(process.execPath, args, { encoding: 'utf8' });
  return spawnSync('setpriv', ['--bounding-set', '-dac_override,-dac_read_search', process.execPath, ...args], { encoding: 'utf8' });
}

describe('reading a database in a read-only directory', () => {
  it('status says what is wrong (no write was attempted), exit 78, not a failed write with exit 75', { timeout: 60_000 }, () => {
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    store.recordJobRun('composition:sindex', Date.now());
    store.close();
    chmodSync(dirname(db), 0o555);
    try {
      const r = statusCommand(db);
      expect(r.stderr).not.toContain('could not be written');
      expect(r.stderr).not.toContain('nothing of this write was kept');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toContain(`cannot read database ${db}: SQLite needs to create indexbot.db-shm in ${dirname(db)}`);
      expect(r.status).toBe(78);
    } finally {
      chmodSync(dirname(db), 0o700);
    }
  });
});
