import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * `mkdir -p`, a level at a time. Node 20's `mkdirSync(path, { recursive: true })` never
 * returns for a path under /proc: the parent exists, the child gives ENOENT, and it tries
 * again at full CPU, deaf to SIGTERM (trial 24: `run --db /proc/nope/x.db`). This meets that
 * ENOENT once and throws it, as mkdir's own error (its `code`) for the level that failed.
 */
export function makeDirectories(dir: string): void {
  const missing = missingDirectories(dir);
  // An existing path: the native call returns at once, or throws EEXIST for a file.
  if (missing.length === 0) mkdirSync(dir, { recursive: true });
  for (const level of missing.reverse()) {
    try {
      mkdirSync(level);
    } catch (e) {
      // Made by another process meanwhile: as good.
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(level).isDirectory()) throw e;
    }
  }
}

/** `dir` and those of its parents that do not exist yet, the deepest first: what making it makes. */
export function missingDirectories(dir: string): string[] {
  const missing: string[] = [];
  for (let at = resolve(dir); !existsSync(at) && dirname(at) !== at; at = dirname(at)) missing.push(at);
  return missing;
}

/** Why a directory could not be made or written, by mkdir's or access's error code. */
export const WHY_NOT_WRITABLE: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EEXIST: 'it is a file, not a directory',
  ENOENT: 'its parent cannot hold directories (a /proc or /sys path, or a broken symlink)',
  ENOSPC: 'the disk is full',
};
