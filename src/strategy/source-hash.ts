import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';

/** A relative specifier after `from`, `import` or `import(`: the user's own modules (packages are versioned apart). */
const LOCAL_IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"\n]+)['"]/g;
/** What a specifier may leave out, as tsx and TypeScript resolve it. */
const SUFFIXES = ['', '.ts', '.mts', '.js', '.mjs', '/index.ts', '/index.mts', '/index.js', '/index.mjs'];

/**
 * The SHA-256 of a strategy's source: its file, and every module of the user's it imports,
 * directly or through another (relative imports, outside node_modules). A helper in
 * `strategies/lib/` changes what a run does as much as the strategy file does, so it changes
 * the run id, the report's folder and an optimize study. A file that imports none of its own
 * hashes as its bytes alone, as before helpers were counted.
 */
export function strategySourceHash(file: string): string {
  const root = resolve(file);
  const hash = createHash('sha256').update(readFileSync(root));
  const seen = new Set([root]);
  const pending = [root];
  const helpers: string[] = [];
  for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
    for (const [, specifier] of readFileSync(path, 'utf8').matchAll(LOCAL_IMPORT)) {
      const found = resolveLocal(dirname(path), specifier!);
      if (found === undefined || seen.has(found)) continue;
      seen.add(found);
      pending.push(found);
      helpers.push(found);
    }
  }
  // In path order, each named: the same sources hash the same whatever order they were found in.
  for (const helper of helpers.sort()) hash.update(`\n// ${relative(dirname(root), helper)}\n`).update(readFileSync(helper));
  return hash.digest('hex');
}

/** The file a relative specifier names, or undefined (an import that fails to load fails the load itself). */
function resolveLocal(dir: string, specifier: string): string | undefined {
  const base = resolve(dir, specifier);
  // TypeScript's convention: `./x.js` in the source names ./x.ts.
  const typescript = base.replace(/\.js$/, '.ts').replace(/\.mjs$/, '.mts');
  for (const candidate of [...SUFFIXES.map((s) => base + s), typescript]) {
    if (candidate.includes('/node_modules/')) return undefined;
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {}
  }
  return undefined;
}
