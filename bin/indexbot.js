#!/usr/bin/env node
// An installed package runs its compiled dist/ on plain Node. A checkout (src/ beside bin/,
// which the tarball does not ship) runs the TypeScript source through tsx, and `indexbot`
// imports resolve to src/ too (the package's "indexbot-source" export condition): no build
// step while developing.
import { existsSync } from 'node:fs';
import { register } from 'node:module';

const source = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(source)) {
  const tsx = await import('tsx/esm/api');
  tsx.register();
  register('data:text/javascript,export const resolve = (s, c, next) => next(s, { ...c, conditions: [...c.conditions, "indexbot-source"] });');
  await import(source.href);
} else {
  await import('../dist/cli/main.js');
}
