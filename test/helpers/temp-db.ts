import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh database path in its own temp directory, per test. */
export function tempDbPath(name = 'indexbot.db'): string {
  return join(mkdtempSync(join(tmpdir(), 'indexbot-db-')), name);
}

/** `value` as JSON in a file of that name, in its own temp directory (a grid, a search space). */
export function tempJsonFile(name: string, value: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'indexbot-json-')), name);
  writeFileSync(file, JSON.stringify(value));
  return file;
}
