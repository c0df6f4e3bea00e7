import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StrategyError } from '../../src/core/index.ts';
import { loadStrategies, loadStrategy, loadStrategyModule } from '../../src/strategy/index.ts';
import { buildCache } from '../helpers/backtest-cache.ts';
import { captureLogger } from '../helpers/fake-transport.ts';

/**
 * Strategy files in a project outside this repository, as a user keeps them: their
 * `indexbot` import resolves from the project's own node_modules (here a link to this
 * package, as `npm install` of a local path makes).
 */
const project = mkdtempSync(join(tmpdir(), 'indexbot-user-project-'));
mkdirSync(join(project, 'node_modules'));
symlinkSync(resolve('.'), join(project, 'node_modules', 'indexbot'), 'dir');
symlinkSync(resolve('node_modules/zod'), join(project, 'node_modules', 'zod'), 'dir');
afterAll(() => rmSync(project, { recursive: true, force: true }));

let dirs = 0;
function strategiesDir(files: Record<string, string>, packageJson: object | undefined = { type: 'module' }): string {
  const dir = join(project, `strategies-${++dirs}`);
  mkdirSync(dir);
  if (packageJson) writeFileSync(join(dir, 'package.json'), JSON.stringify(packageJson));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const plain = (name: string, body = "'performance.updated': (_e, ctx) => ctx.state.set('seen', true)") => `import { defineStrategy } from 'indexbot';
export default defineStrategy({
  name: '${name}',
  on: { ${body} },
});
`;

describe('strategy files outside the repository', () => {
  it('loads a TypeScript strategy that imports indexbot, with or without a package.json of type module', async () => {
    for (const packageJson of [{ type: 'module' }, undefined]) {
      const dir = strategiesDir({ 'plain.ts': plain('plain') }, packageJson);
      const loaded = await loadStrategies(dir, { logger: captureLogger().logger, explicit: true });
      expect(loaded.map((l) => l.strategy.name)).toEqual(['plain']);
    }
  });

  it('says a strategy failed because its package.json makes it CommonJS, not that it exports nothing (found by trial 26: npm init -y writes "commonjs")', async () => {
    const dir = strategiesDir(
      {
        'plain.ts': plain('plain'),
        'sized.ts': `import { size } from './size.ts';\nimport { defineStrategy } from 'indexbot';\nexport default defineStrategy({ name: 'sized', on: { 'performance.updated': () => { size(1); } } });\n`,
        'size.ts': 'export function size(n: number): number {\n  return n * 2;\n}\n',
      },
      { type: 'commonjs' },
    );
    const hint = `; ${join(dir, 'package.json')} says "type": "commonjs", and strategies are ES modules: set "type": "module" there (\`npx indexbot init .\` does), or name the file .mts`;
    const plainError = await loadStrategyModule(join(dir, 'plain.ts')).catch((e: unknown) => e as StrategyError);
    expect(plainError).toBeInstanceOf(StrategyError);
    // As CommonJS, its `indexbot` import resolves to the built dist/ (absent in a fresh clone: a load error), or its default export is nested: either way the hint.
    expect((plainError as StrategyError).message.startsWith(`${join(dir, 'plain.ts')}: `)).toBe(true);
    expect((plainError as StrategyError).message.endsWith(hint)).toBe(true);
    expect((plainError as StrategyError).message).not.toContain('exports no strategy');
    const sizedError = await loadStrategyModule(join(dir, 'sized.ts')).catch((e: unknown) => e as StrategyError);
    expect((sizedError as StrategyError).message.endsWith(hint)).toBe(true);
    // A JavaScript file is told of .mjs (trial 27: .mts).
    writeFileSync(join(dir, 'plain.js'), 'module.exports = { notAStrategy: true };\n');
    const jsError = await loadStrategyModule(join(dir, 'plain.js')).catch((e: unknown) => e as StrategyError);
    expect((jsError as StrategyError).message).toMatch(/, or name the file \.mjs$/);
    // The same files under "type": "module" load (Node reads a package.json once per process: another directory).
    const moduleDir = strategiesDir({ 'sized.ts': readFileSync(join(dir, 'sized.ts'), 'utf8'), 'size.ts': readFileSync(join(dir, 'size.ts'), 'utf8') });
    expect((await loadStrategyModule(join(moduleDir, 'sized.ts'))).name).toBe('sized');
  });

  it('gives a strategy without params empty params, and refuses params the config sets for it', async () => {
    const dir = strategiesDir({ 'plain.ts': plain('plain') });
    const [loaded] = await loadStrategies(dir, { logger: captureLogger().logger });
    expect(loaded!.params).toEqual({});
    const err = await loadStrategies(dir, { logger: captureLogger().logger, params: { plain: { usd: 5 } } }).catch((e: unknown) => e);
    expect((err as StrategyError).code).toBe('STRATEGY_PARAMS');
    expect((err as StrategyError).message).toMatch(/plain\.ts: params of "plain" are invalid: unknown key "usd" \(known: none\)/);
  });

  it('names the file and line of a syntax error, and the file of a missing import', async () => {
    const cases: [string, string, RegExp][] = [
      [
        'broken.ts',
        "import { defineStrategy } from 'indexbot';\n\nexport default defineStrategy({\n  name: 'broken',\n  on: { 'performance.updated': () => { ,\n});\n",
        /broken\.ts:5: failed to load: /,
      ],
      ['missing.ts', "import { helper } from './no-such-helper.ts';\nexport default helper;\n", /missing\.ts: failed to load: .*no-such-helper/],
      // A helper's own syntax error, or throw at import, is named with its line.
      ['uses-broken.ts', "import { limit } from './_broken-helper.ts';\nexport default limit;\n", /uses-broken\.ts: failed to load: \S*_broken-helper\.ts:2: /],
      ['uses-throwing.ts', "import { limit } from './lib/throwing-helper.ts';\nexport default limit;\n", /uses-throwing\.ts: failed to load: \S*lib\/throwing-helper\.ts:3: no limit set/],
    ];
    for (const [name, text, expected] of cases) {
      const dir = strategiesDir({ [name]: text, '_broken-helper.ts': 'export const limit =\n  1 +;\n' });
      mkdirSync(join(dir, 'lib'));
      writeFileSync(join(dir, 'lib', 'throwing-helper.ts'), "export const limit = 1;\n\nthrow new Error('no limit set');\n");
      const err = await loadStrategies(dir, { logger: captureLogger().logger }).catch((e: unknown) => e);
      expect(err, name).toBeInstanceOf(StrategyError);
      expect((err as StrategyError).message, name).toContain(join(dir, name));
      expect((err as StrategyError).message, name).toMatch(expected);
    }
  });

  it("tells a strategy kept outside a project that installs indexbot where indexbot must be, without Node's require stack (found by a trial: it ended at 'Require stack:')", async () => {
    const outside = mkdtempSync(join(tmpdir(), 'indexbot-outside-'));
    // No package.json, as the trial's folder: loaded as CommonJS, where Node adds its require stack.
    const file = join(outside, 'lonely.ts');
    writeFileSync(file, plain('lonely'));
    // Through the CLI, as a user meets it: in this test process `indexbot` resolves everywhere.
    const r = spawnSync(process.execPath, ['bin/indexbot.js', 'backtest', '--strategy', file, '--db', buildCache()], { encoding: 'utf8', env: { ...process.env } });
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(
          `^indexbot: ${file.replaceAll('.', '\\.')}: failed to load: Cannot find (module|package) 'indexbot'[^:]*: no node_modules/indexbot beside the file or above it; keep strategies in a project that installs indexbot \\(npx indexbot init makes one\\) \\[STRATEGY_LOAD\\]$`,
        ),
      ),
    ]);
    expect(r.status).toBe(78);
  });

  it('refuses params that are not a zod schema, naming the file', async () => {
    const dir = strategiesDir({ 'odd.ts': "import { defineStrategy } from 'indexbot';\nexport default defineStrategy({ name: 'odd', params: { usd: 1 } as never, on: {} });\n" });
    await expect(loadStrategies(dir, { logger: captureLogger().logger })).rejects.toThrow(/odd\.ts: params of "odd" must be a zod schema/);
  });

  it('imports a changed file afresh (watch mode), TypeScript with its own imports and JavaScript, and the packages they import once', async () => {
    const dir = strategiesDir({});
    const ts = join(dir, 'changing.ts');
    const helper = join(dir, 'limit.ts');
    writeFileSync(helper, 'export const limit = 1;\n');
    writeFileSync(
      ts,
      "import { defineStrategy } from 'indexbot';\nimport { limit } from './limit.ts';\nexport default defineStrategy({ name: 'changing', description: ['v1', limit].join(' '), on: {} });\n",
    );
    expect((await loadStrategyModule(ts)).description).toBe('v1 1');
    writeFileSync(helper, 'export const limit = 2;\n');
    writeFileSync(
      ts,
      "import { defineStrategy } from 'indexbot';\nimport { limit } from './limit.ts';\nexport default defineStrategy({ name: 'changing', description: ['v2', limit].join(' '), on: {} });\n",
    );
    expect((await loadStrategyModule(ts)).description).toBe('v2 2');

    // A package it imports is not: it is the instance everything else in the process uses.
    const counted = join(project, 'node_modules', 'counted');
    mkdirSync(counted);
    writeFileSync(join(counted, 'package.json'), JSON.stringify({ name: 'counted', type: 'module', exports: './index.js' }));
    writeFileSync(join(counted, 'index.js'), 'globalThis.countedEvaluations = (globalThis.countedEvaluations ?? 0) + 1;\nexport const evaluations = () => globalThis.countedEvaluations;\n');
    const user = join(dir, 'user.ts');
    writeFileSync(
      user,
      "import { defineStrategy } from 'indexbot';\nimport { z } from 'zod';\nimport { evaluations } from 'counted';\nexport default defineStrategy({ name: 'user', params: z.object({}), description: String(evaluations()), on: {} });\n",
    );
    for (let i = 0; i < 3; i++) expect((await loadStrategyModule(user)).description).toBe('1');
    // The schema is made by the zod the engine validates with.
    expect((await loadStrategyModule(user)).params).toBeInstanceOf(z.ZodType);

    const js = join(dir, 'changing.mjs');
    writeFileSync(js, "import { defineStrategy } from 'indexbot';\nexport default defineStrategy({ name: 'changing-js', description: 'v1', on: {} });\n");
    expect((await loadStrategy(js)).strategy.description).toBe('v1');
    writeFileSync(js, "import { defineStrategy } from 'indexbot';\nexport default defineStrategy({ name: 'changing-js', description: 'v2', on: {} });\n");
    expect((await loadStrategy(js)).strategy.description).toBe('v2');
  });
});

describe('indexbot run --strategies DIR outside the repository', () => {
  it('stops with exit 78 and one line naming the file and line of a throw at import, and of a JavaScript syntax error', { timeout: 120_000 }, async () => {
    const cases: [string, string, string][] = [
      [
        'throws.ts',
        "import { defineStrategy } from 'indexbot';\n\nconst limit = Number('x');\nif (Number.isNaN(limit)) throw new Error('limit is not a number');\nexport default defineStrategy({ name: 'throws', on: {} });\n",
        ':4: failed to load: limit is not a number [STRATEGY_LOAD]',
      ],
      ['bad.mjs', "export default {\n  name: 'x',,\n};\n", ":2: failed to load: Unexpected token ',' [STRATEGY_LOAD]"],
    ];
    for (const [name, text, expected] of cases) {
      const dir = strategiesDir({ [name]: text, '_broken-helper.ts': 'export const limit =\n  1 +;\n' });
      mkdirSync(join(dir, 'lib'));
      writeFileSync(join(dir, 'lib', 'throwing-helper.ts'), "export const limit = 1;\n\nthrow new Error('no limit set');\n");
      const r = spawnSync(process.execPath, ['bin/indexbot.js', 'run', '--strategies', dir, '--db', join(dir, 'bot.db')], {
        env: { ...process.env, INDEXBOT_BASE_URL: 'http://127.0.0.1:9/v1' },
        encoding: 'utf8',
      });
      expect(r.status, name).toBe(78);
      expect(r.stderr.trim().split('\n').at(-1), name).toBe(`indexbot: ${join(dir, name)}${expected}`);
    }
  });

  it('never prints a credential a strategy quotes in its error: the API key it read is blanked out', { timeout: 60_000 }, () => {
    const key = 'sk_sandbox_premium_CANARY0123456789';
    const dir = strategiesDir({
      'keyed.ts':
        "import { defineStrategy } from 'indexbot';\nconst apiKey = process.env.INDEXBOT_API_KEY;\nthrow new Error('cannot init with key ' + apiKey);\nexport default defineStrategy({ name: 'keyed', on: {} });\n",
    });
    const r = spawnSync(process.execPath, ['bin/indexbot.js', 'run', '--strategies', dir, '--db', join(dir, 'bot.db')], {
      env: { ...process.env, INDEXBOT_BASE_URL: 'http://127.0.0.1:9/v1', INDEXBOT_API_KEY: key },
      encoding: 'utf8',
    });
    expect(r.status).toBe(78);
    expect(r.stderr).not.toContain(key);
    expect(r.stderr.trim().split('\n').at(-1)).toBe(`indexbot: ${join(dir, 'keyed.ts')}:3: failed to load: cannot init with key [REDACTED] [STRATEGY_LOAD]`);
  });
});
