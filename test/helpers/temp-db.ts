import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh database path in its own temp directory, per test. */
export function tempDbPath(name = 'indexbot.db'): string {
  return join(mkdtempSync(join(tmpdir(), 'indexbot-db-')), name);
}
