import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBacktest } from '../../src/backtest/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import type { StrategyError } from '../../src/core/index.ts';
import { EVENT_TYPES } from '../../src/detect/index.ts';
import { loadStrategy, loadStrategyModule, strategySourceHash } from '../../src/strategy/index.ts';
import { H, T0, buildCache } from '../helpers/backtest-cache.ts';

/** Writes `files` (path -> text) under a new directory and returns it. */
function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'indexbot-hash-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('strategySourceHash', () => {
  it('is the hash of the file alone when it imports none of its own modules', () => {
    const dir = project({ 's.ts': "import { z } from 'zod';\nexport default {};\n" });
    expect(strategySourceHash(join(dir, 's.ts'))).toBe(sha256(join(dir, 's.ts')));
  });

  it('changes with every module of the user’s the strategy imports, through any of the ways TypeScript names them', () => {
    const dir = project({
      's.ts': "import { a } from './lib/a.js';\nimport b from './lib/b';\nexport { c } from './lib/c/index.ts';\nconst d = () => import('./lib/d.mts');\n",
      'lib/a.ts': "import { e } from '../e';\nexport const a = 1;\n",
      'lib/b.ts': 'export default 2;\n',
      'lib/c/index.ts': "import '../../s.ts';\nexport const c = 3;\n",
      'lib/d.mts': 'export const d = 4;\n',
      'e.ts': 'export const e = 5;\n',
      'unrelated.ts': 'export const x = 6;\n',
    });
    const file = join(dir, 's.ts');
    const before = strategySourceHash(file);
    expect(before).not.toBe(sha256(file));
    for (const helper of ['lib/a.ts', 'lib/b.ts', 'lib/c/index.ts', 'lib/d.mts', 'e.ts']) {
      const text = readFileSync(join(dir, helper), 'utf8');
      writeFileSync(join(dir, helper), `${text}// changed\n`);
      expect(strategySourceHash(file), helper).not.toBe(before);
      writeFileSync(join(dir, helper), text);
      expect(strategySourceHash(file), helper).toBe(before);
    }
    writeFileSync(join(dir, 'unrelated.ts'), 'export const x = 7;\n');
    expect(strategySourceHash(file)).toBe(before);
  });

  it('gives a backtest a new run id when a helper changes what it does', async () => {
    const brand = "[Symbol.for('indexbot.strategy')]: true";
    const dir = project({
      'buyer.ts': `import { size } from './lib/size.ts';\nexport default Object.freeze({ name: 'helper-buyer', ${brand}, on: { 'rebalance.announced': async (e: any, ctx: any) => { for (const c of e.payload.changes) await ctx.broker.buy({ instrument: { kind: 'token', address: c.address }, notionalUsd: size() }); } } });\n`,
      'lib/size.ts': 'export const size = () => 100;\n',
      'package.json': '{ "type": "module" }\n',
    });
    const cache = SnapshotStore.open(buildCache(), { readonly: true });
    const run = async () => runBacktest({ cache, strategy: await loadStrategy(join(dir, 'buyer.ts')), indexes: ['x', 'y'], from: T0, to: T0 + 119 * H });
    const first = await run();
    writeFileSync(join(dir, 'lib/size.ts'), 'export const size = () => 200;\n');
    const second = await run();
    cache.close();
    expect(second.fillsHash).not.toBe(first.fillsHash);
    expect(second.strategy.sourceHash).not.toBe(first.strategy.sourceHash);
    expect(second.runId).not.toBe(first.runId);
  });
});

describe('loading a JavaScript strategy again', () => {
  it('reads its helpers afresh, as a TypeScript one’s (in a process of its own: the test runner imports JavaScript itself)', () => {
    const dir = project({
      'package.json': '{ "type": "module" }\n',
      's.mjs': "import { v } from './lib/v.mjs';\nexport default Object.freeze({ name: 'js-' + v(), on: {}, [Symbol.for('indexbot.strategy')]: true });\n",
      'lib/v.mjs': "export const v = () => 'one';\n",
      'load.mjs': `import { writeFileSync } from 'node:fs';
const { loadStrategyModule } = await import(${JSON.stringify(new URL('../../src/strategy/index.ts', import.meta.url).href)});
const first = await loadStrategyModule(new URL('./s.mjs', import.meta.url).pathname);
writeFileSync(new URL('./lib/v.mjs', import.meta.url), "export const v = () => 'two';\\n");
const second = await loadStrategyModule(new URL('./s.mjs', import.meta.url).pathname);
// TypeScript after JavaScript: its extensionless import resolves, and its helper is read afresh too.
const third = await loadStrategyModule(new URL('./t.ts', import.meta.url).pathname);
writeFileSync(new URL('./lib/w.ts', import.meta.url), "export const w = (): string => 'four';\\n");
const fourth = await loadStrategyModule(new URL('./t.ts', import.meta.url).pathname);
console.log(first.name, second.name, third.name, fourth.name);
`,
      't.ts': "import { w } from './lib/w';\nexport default Object.freeze({ name: 'ts-' + w(), on: {}, [Symbol.for('indexbot.strategy')]: true });\n",
      'lib/w.ts': "export const w = (): string => 'three';\n",
    });
    const out = spawnSync(process.execPath, ['--import', 'tsx', join(dir, 'load.mjs')], { encoding: 'utf8' });
    expect(out.stderr).toBe('');
    expect(out.stdout.trim()).toBe('js-one js-two ts-three ts-four');
  });
});

describe('a strategy’s handlers', () => {
  it('are refused, naming the file and the type, for a misspelt event type or a handler that is not a function', async () => {
    const brand = "[Symbol.for('indexbot.strategy')]: true";
    const dir = project({
      'package.json': '{ "type": "module" }\n',
      'typo.mjs': `export default Object.freeze({ name: 'typo', ${brand}, on: { 'rebalance.announce': () => {} } });\n`,
      'not-a-function.mjs': `export default Object.freeze({ name: 'nf', ${brand}, on: { 'rebalance.completed': 'sell' } });\n`,
    });
    const typo = await loadStrategyModule(join(dir, 'typo.mjs')).catch((e: unknown) => e);
    expect((typo as StrategyError).code).toBe('STRATEGY_LOAD');
    expect((typo as Error).message).toBe(`${join(dir, 'typo.mjs')}: "typo" handles "rebalance.announce", which is no event type (${EVENT_TYPES.join(', ')})`);
    const notFunction = await loadStrategyModule(join(dir, 'not-a-function.mjs')).catch((e: unknown) => e);
    expect((notFunction as Error).message).toBe(`${join(dir, 'not-a-function.mjs')}: "nf": the handler for "rebalance.completed" is not a function`);
  });
});

describe('a credential a strategy’s error quotes', () => {
  it('is blanked out where the error is made: at load (doctor, warnings, the CLI) and in a handler (logs, parked events, reports)', async () => {
    const key = 'sk_sandbox_premium_CANARY_9876543210';
    const previous = process.env.INDEXBOT_API_KEY;
    process.env.INDEXBOT_API_KEY = key;
    try {
      const brand = "[Symbol.for('indexbot.strategy')]: true";
      const dir = project({
        'package.json': '{ "type": "module" }\n',
        'at-load.mjs': "throw new Error('cannot start with key ' + process.env.INDEXBOT_API_KEY);\n",
        'in-handler.mjs': `export default Object.freeze({ name: 'leaky', ${brand}, on: { 'performance.updated': () => { throw new Error('handler key ' + process.env.INDEXBOT_API_KEY); } } });\n`,
      });
      const atLoad = (await loadStrategyModule(join(dir, 'at-load.mjs')).catch((e: unknown) => e)) as Error;
      expect(atLoad.message).toBe(`${join(dir, 'at-load.mjs')}:1: failed to load: cannot start with key [REDACTED]`);
      const cache = SnapshotStore.open(buildCache(), { readonly: true });
      const r = await runBacktest({ cache, strategy: await loadStrategy(join(dir, 'in-handler.mjs')), indexes: ['x'], from: T0, to: T0 + 5 * H });
      cache.close();
      expect(r.parked.count).toBeGreaterThan(0);
      expect(r.parked.errors[0]).toMatch(/^performance.updated:x:\S+: Error: handler key \[REDACTED\]/);
      expect(JSON.stringify(r)).not.toContain(key);
    } finally {
      if (previous === undefined) delete process.env.INDEXBOT_API_KEY;
      else process.env.INDEXBOT_API_KEY = previous;
    }
  });
});
