import { spawnSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SnapshotStore } from '../../src/store/index.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

// Root ignores directory permissions: as root, the command runs as `nobody`.
const asUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

describe('reading a database in a read-only directory', () => {
  it('status says what is wrong (no write was attempted), exit 78, not a failed write with exit 75', { timeout: 60_000 }, () => {
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    store.recordJobRun('composition:sindex', Date.now());
    store.close();
    chmodSync(dirname(db), 0o555);
    try {
      const r = spawnSync(process.execPath, ['bin/indexbot.js', 'status', '--db', db], { encoding: 'utf8', ...asUser });
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
