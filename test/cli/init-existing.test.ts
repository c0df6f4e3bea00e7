import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mergePackageJson } from '../../src/cli/project-commands.ts';
import { loadConfig } from '../../src/config/index.ts';

const init = (dir: string) => spawnSync(process.execPath, [resolve('bin/indexbot.js'), 'init', '.'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });

/** What `npm init -y` and then `npm install <tarball>` leave. */
const npmInitThenInstall = {
  name: 'myproj',
  version: '1.0.0',
  main: 'index.js',
  scripts: { test: 'echo "Error: no test specified" && exit 1', lint: 'eslint .' },
  license: 'ISC',
  type: 'commonjs',
  dependencies: { indexbot: 'file:../indexbot-0.1.0.tgz' },
};

describe('init in a directory that has a package.json (npm install indexbot && npx indexbot init .)', () => {
  it('names the deploy files after the package as a unit, directory and image can be named: no scope, [a-z0-9-]', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-init-'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...npmInitThenInstall, name: '@acme/Bot_1', type: 'module' }, null, 2));
    expect(init(dir).status).toBe(0);
    const unit = readFileSync(join(dir, 'deploy/indexbot.service'), 'utf8');
    expect(unit).toMatch(/^WorkingDirectory=\/opt\/bot-1$/m);
    expect(unit).toContain('/etc/systemd/system/bot-1.service && sudo systemctl enable --now bot-1');
    expect(readFileSync(join(dir, 'deploy/Dockerfile'), 'utf8')).toContain('docker build -f deploy/Dockerfile -t bot-1 .');
    expect(unit).not.toContain('__');
    // A bad flag (64) is as permanent as a bad config (78): systemd must not restart either every 5 s.
    expect(unit).toMatch(/^RestartPreventExitStatus=64 78$/m);
    // Its files its own (trial 32: a world-readable database with a wallet's tokens), and no endless restart of a start that always fails.
    expect(unit).toMatch(/^UMask=0077$/m);
    expect(unit).toMatch(/^StateDirectoryMode=0700$/m);
    expect(unit).toMatch(/^StartLimitBurst=5$/m);
    // The image build is not sent the databases.
    expect(readFileSync(join(dir, '.dockerignore'), 'utf8').split('\n')).toEqual(expect.arrayContaining(['data', 'node_modules', '*.db']));
  });

  it('refuses a path that is a file, in one line and exit 78, writing nothing (found by trial 26: exit 70, EEXIST)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-init-'));
    const file = join(dir, 'afile');
    writeFileSync(file, 'mine');
    const run = spawnSync(process.execPath, [resolve('bin/indexbot.js'), 'init', file], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toBe(`indexbot: ${file} is a file, not a directory; nothing was written (name a new or existing directory) [FILE_EXISTS]\n`);
    expect(run.status).toBe(78);
    expect(readFileSync(file, 'utf8')).toBe('mine');
    // A folder on the way that is a file (trial 27: ENOTDIR, exit 70).
    const below = spawnSync(process.execPath, [resolve('bin/indexbot.js'), 'init', join(file, 'sub', 'deeper')], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(below.stderr).toBe(`indexbot: ${file}, on the way to ${join(file, 'sub', 'deeper')}, is a file, not a directory; nothing was written (name a new or existing directory) [FILE_EXISTS]\n`);
    expect(below.status).toBe(78);
  });

  it('writes a config whose tier follows the credential: a wallet user is not told to fix a "basic" they never set (found by trial 25)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-init-'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...npmInitThenInstall, type: 'module' }, null, 2));
    expect(init(dir).status).toBe(0);
    const config = join(dir, 'config/indexbot.json');
    const tier = (env: Record<string, string>) => loadConfig({ config }, env, { server: false, services: false }).tier;
    expect(tier({})).toBe('public');
    expect(tier({ INDEXBOT_API_KEY: 'sk_live_0123456789abcdef' })).toBe('basic');
    expect(tier({ INDEXBOT_WALLET_KEYPAIR: join(dir, 'id.json') })).toBe('standard');
  });

  it('writes the project files and adds to package.json what it lacks, keeping what it has', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-init-'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify(npmInitThenInstall, null, 2));
    const run = init(dir);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('package.json: type "module" (was "commonjs"); scripts start, test, typecheck, backtest; dependencies zod; devDependencies @types/node, typescript, vitest; engines');
    // The next steps name each script init added: typecheck was left out.
    expect(run.stdout).toMatch(/\nnext:\n {2}npm install\n {2}npm start +# the demo with your strategies\n {2}npm test\n {2}npm run typecheck +# tsc over your strategies and tests\n$/);
    for (const file of ['tsconfig.json', 'strategies/follow-rebalance.ts', 'test/follow-rebalance.test.ts', 'config/indexbot.json', 'deploy/indexbot.service', 'deploy/Dockerfile'])
      expect(existsSync(join(dir, file)), file).toBe(true);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({ name: 'myproj', version: '1.0.0', license: 'ISC', type: 'module', dependencies: { indexbot: 'file:../indexbot-0.1.0.tgz' } });
    expect(pkg.scripts).toMatchObject({ test: 'vitest run', lint: 'eslint .', start: 'indexbot demo --strategies strategies' });
    expect(Object.keys(pkg.devDependencies).sort()).toEqual(['@types/node', 'typescript', 'vitest']);
  });

  it('refuses a CommonJS project with JavaScript of its own, which "type": "module" would break, writing nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-init-'));
    const before = JSON.stringify({ ...npmInitThenInstall, scripts: { test: 'jest' } }, null, 2);
    writeFileSync(join(dir, 'package.json'), before);
    writeFileSync(join(dir, 'index.js'), 'module.exports = { answer: 42 };\n');
    const run = init(dir);
    expect(run.status).toBe(78);
    expect(run.stderr).toMatch(
      /^indexbot: .*package\.json: "type" is "commonjs" and the project has JavaScript files of its own \(index\.js\); indexbot's strategies need "type": "module", which would break them: rename them \.cjs, or run init in a directory of its own; nothing was written \[PROJECT_COMMONJS\]\n$/,
    );
    expect(existsSync(join(dir, 'tsconfig.json'))).toBe(false);
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe(before);
  });

  it('says what it kept that does not fit: a zod before 4, a test script that is not vitest', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-init-'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...npmInitThenInstall, scripts: { test: 'jest' }, dependencies: { ...npmInitThenInstall.dependencies, zod: '^3.23.0' } }, null, 2));
    const run = init(dir);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("note: zod ^3.23.0 kept; indexbot's strategy params are zod 4 schemas (install zod@4)\n");
    expect(run.stdout).toContain('note: scripts.test "jest" kept; the generated test/*.test.ts run with vitest (npx vitest run)\n');
    // Installed from a tarball beside the project: the deploy files could not build (trial 35).
    expect(run.stdout).toContain(
      'note: indexbot "file:../indexbot-0.1.0.tgz" is outside the project: deploy/Dockerfile and the systemd steps run npm ci on the project alone; copy it in and npm install it from there (npm install ./indexbot-0.1.0.tgz)\n',
    );
    const inside = mkdtempSync(join(tmpdir(), 'indexbot-init-'));
    writeFileSync(join(inside, 'package.json'), JSON.stringify({ ...npmInitThenInstall, dependencies: { indexbot: 'file:indexbot-0.1.0.tgz' } }, null, 2));
    expect(init(inside).stdout).not.toContain('is outside the project');
  });

  it('refuses a package.json that is not JSON, writing nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-init-'));
    writeFileSync(join(dir, 'package.json'), '{"name": "x",');
    const run = init(dir);
    expect(run.status).toBe(78);
    expect(run.stderr).toMatch(/^indexbot: .*package\.json: not valid JSON \(.*\); nothing was written \[FILE_INVALID\]\n$/);
    expect(existsSync(join(dir, 'tsconfig.json'))).toBe(false);
  });
});

describe('mergePackageJson', () => {
  it('changes nothing a project already set up has', () => {
    const ours = { scripts: { test: 'vitest run' }, dependencies: { indexbot: '^0.1.0' }, devDependencies: { vitest: '^4' }, engines: { node: '>=20' } };
    const mine = { type: 'module', scripts: { test: 'vitest run --coverage' }, dependencies: { indexbot: '^0.1.0', vitest: '^3' }, engines: { node: '>=22' } };
    expect(mergePackageJson(mine, ours)).toEqual({ merged: mine, changes: [] });
  });
});

describe('new-strategy', () => {
  const newStrategy = (dir: string, name: string) => spawnSync(process.execPath, [resolve('bin/indexbot.js'), 'new-strategy', name, '--dir', dir], { encoding: 'utf8', timeout: 60_000 });

  it('writes the strategy and its test; a name taken names each file in the way and says to pick another name, writing nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-new-'));
    const made = newStrategy(dir, 'momentum');
    expect([made.status, made.stdout]).toEqual([0, 'created test/momentum.test.ts and strategies/momentum.ts\n']);
    const again = newStrategy(dir, 'momentum');
    expect(again.status).toBe(78);
    // It named the test file alone, and said to pick another directory (it takes a name).
    expect(again.stderr).toBe(
      `indexbot: ${join(dir, 'test/momentum.test.ts')} and ${join(dir, 'strategies/momentum.ts')} already exist; nothing was written (pick another name, or move it away) [FILE_EXISTS]\n`,
    );
  });
});
