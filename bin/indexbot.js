#!/usr/bin/env node
// An installed package runs its compiled dist/ on plain Node. A checkout (src/ and scripts/
// beside bin/, which the tarball does not ship) runs the TypeScript source through tsx, and
// `indexbot` imports resolve to src/ too (scripts/source-imports.mjs): no build step while
// developing.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(source)) {
  await import('../scripts/register-source-imports.mjs');
  await import(source.href);
} else {
  await import('../dist/cli/main.js');
}
