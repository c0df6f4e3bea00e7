import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * What a user does, from the tarball: install it in a fresh npm project outside the repo,
 * `npx indexbot init .` there (and `init` of a new directory), `npm install`, then typecheck,
 * test, run the demo with the example strategy, and import the package on plain Node. The npm cache is shared
 * and offline copies preferred.
 *
 * better-sqlite3 would be compiled from source by each install (no network for its prebuilt
 * binary): two compiles were most of CI's time. prebuild-install's documented local-prebuilds
 * directory is given the binary this checkout already built, packed under the name it looks for,
 * so each install unpacks it as it would a download; what this test checks is our package.
 */
const work = mkdtempSync(join(tmpdir(), 'indexbot-package-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function localPrebuild(): Record<string, string> {
  const dir = join(work, 'prebuilds');
  mkdirSync(dir);
  const sqlite = resolve('node_modules/better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(sqlite, 'package.json'), 'utf8')) as { version: string };
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  ok('tar', ['-czf', join(dir, name), 'build/Release/better_sqlite3.node'], sqlite);
  return { npm_config_better_sqlite3_local_prebuilds: dir };
}

const NPM_FLAGS = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];
const env: NodeJS.ProcessEnv = { ...process.env, npm_config_update_notifier: 'false' };
for (const key of Object.keys(env)) if (key.startsWith('VITEST') || key === 'NODE_OPTIONS') delete env[key];

function run(cmd: string, args: string[], cwd: string, extraEnv: Record<string, string> = {}, timeoutMs = 900_000) {
  const r = spawnSync(cmd, args, { cwd, env: { ...env, ...extraEnv }, encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status ?? r.signal, stdout: r.stdout ?? '', stderr: r.stderr ?? '', out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

function ok(cmd: string, args: string[], cwd: string, extraEnv: Record<string, string> = {}, timeoutMs?: number): string {
  const r = run(cmd, args, cwd, extraEnv, timeoutMs);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} in ${cwd} exited ${r.status}:\n${r.out.slice(-3000)}`);
  return r.stdout;
}

describe('the published package', () => {
  it('installs, inits a project that typechecks, tests, runs the demo with its own strategy, and imports on plain Node', { timeout: 2_400_000 }, () => {
    // What prepack runs, then the pack itself (its JSON alone on stdout).
    ok('npm', ['run', 'build'], resolve('.'));
    const packed = JSON.parse(ok('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], resolve('.'))) as { filename: string; size: number; files: { path: string }[] }[];
    const tarball = join(work, packed[0]!.filename);
    const files = packed[0]!.files.map((f) => f.path);
    expect(statSync(tarball).size).toBeLessThan(1_000_000);
    expect(files.filter((f) => /^(test|bench|\.ci|src|scripts)\//.test(f))).toEqual([]);
    // The clone's Dockerfile and compose build from src/, which the tarball does not hold (trial 29): a project gets its own from init.
    expect(files.filter((f) => f.startsWith('deploy/'))).toEqual(['deploy/grafana-dashboard.json']);
    for (const f of [
      'dist/public/index.js',
      'dist/public/index.d.ts',
      'dist/public/testing.d.ts',
      'dist/cli/main.js',
      'bin/indexbot.js',
      'LICENSE',
      'README.md',
      'config/indexbot.schema.json',
      'templates/project/_gitignore',
    ]) {
      expect(files).toContain(f);
    }

    const prebuilt = localPrebuild();
    const home = join(work, 'home');
    mkdirSync(home);
    // The README's way in: `npm init -y`, `npm install indexbot`, `npx indexbot init .`.
    writeFileSync(join(home, 'package.json'), JSON.stringify({ name: 'home', version: '1.0.0', scripts: { test: 'echo "Error: no test specified" && exit 1' }, type: 'commonjs' }));
    ok('npm', ['install', ...NPM_FLAGS, tarball], home, prebuilt);
    expect(ok('npx', ['indexbot', '--version'], home).trim()).toBe(JSON.parse(readFileSync('package.json', 'utf8')).version);
    // A new directory is made whole; made again, it names what exists and writes nothing.
    expect(ok('npx', ['indexbot', 'init', join(work, 'fresh-bot')], home)).toContain('created fresh-bot');
    const again = run('npx', ['indexbot', 'init', join(work, 'fresh-bot')], home);
    expect(again.status).toBe(78);
    expect(again.stderr.split('\n').filter((l) => l.startsWith('indexbot:'))).toEqual([
      expect.stringMatching(/fresh-bot\/[^ ]+ and \d+ more of the files it writes already exist; nothing was written \(move it away, or pick another directory\)/),
    ]);
    expect(again.stderr).not.toMatch(/^\s+at /m);

    expect(ok('npx', ['indexbot', 'init', '.'], home)).toContain('package.json: type "module" (was "commonjs")');
    const bot = home;
    ok('npm', ['install', ...NPM_FLAGS], bot, prebuilt);
    // The deploy files init wrote start the installed bin, from the project directory.
    const unit = readFileSync(join(bot, 'deploy/indexbot.service'), 'utf8');
    const bin = /^ExecStart=\/usr\/bin\/node (\S+) run --config /m.exec(unit)?.[1];
    expect(bin).toBe('node_modules/indexbot/bin/indexbot.js');
    expect(unit).toMatch(/^WorkingDirectory=\/opt\/home$/m);
    expect(ok('node', [bin!, '--version'], bot).trim()).toBe(JSON.parse(readFileSync('package.json', 'utf8')).version);
    const docker = readFileSync(join(bot, 'deploy/Dockerfile'), 'utf8');
    expect(docker).toContain(`CMD ["node", "${bin}", "run"]`);
    const sources = [...docker.matchAll(/^COPY (?:--chown=\S+ )?(.+) \S+$/gm)].flatMap((m) => m[1]!.split(' '));
    expect(sources).toEqual(['package.json', 'package-lock.json', 'strategies', 'config']);
    // init writes the config 0600: copied as root's, USER node could not read it, and the bot exited 78 at every start (trial 35).
    expect((statSync(join(bot, 'config/indexbot.json')).mode & 0o777).toString(8)).toBe('600');
    expect(docker).toMatch(/^COPY --chown=node:node config \.\/config$/m);
    expect(docker.indexOf('COPY --chown=node:node config')).toBeLessThan(docker.indexOf('USER node'));
    for (const source of sources) expect(existsSync(join(bot, source)), source).toBe(true);
    // Its compose: the project's image, the installed bin, one consumer group per runner.
    const compose = readFileSync(join(bot, 'deploy/compose.yaml'), 'utf8');
    expect(compose).toContain('build: { context: .., dockerfile: deploy/Dockerfile }');
    const commands = [...compose.matchAll(/^ {4}command: \["node", "([^"]+)", "run", "--role", "(\w+)"(?:, "--group", "([\w-]+)")?\]$/gm)].map((m) => [m[1], m[2], m[3]]);
    expect(commands).toEqual([
      [bin, 'collector', undefined],
      [bin, 'strategies', 'runner-1'],
      [bin, 'strategies', 'runner-2'],
    ]);
    ok('npm', ['run', 'typecheck'], bot);
    // A user's own tsconfig checks the package's declarations (skipLibCheck off): every type they name is installed with it (trial 30: big.js's were not).
    writeFileSync(
      join(bot, 'entry-points.ts'),
      ['', '/client', '/backtest', '/sandbox', '/testing'].map((p, i) => `import * as entry${i} from 'indexbot${p}';\nexport type Entry${i} = typeof entry${i};\n`).join(''),
    );
    // ...and under exactOptionalPropertyTypes, the README's client example as written, and options given as possibly undefined (trial 36: TS2379 on `apiKey: process.env...`).
    const readme = readFileSync(join(bot, 'node_modules/indexbot/README.md'), 'utf8');
    const clientExample = /^## The client\n\n```ts\n([\s\S]*?)```/m.exec(readme)?.[1];
    expect(clientExample).toContain('apiKey: process.env.INDEXBOT_API_KEY');
    writeFileSync(join(bot, 'readme-client.ts'), `${clientExample}export {};\n`);
    writeFileSync(
      join(bot, 'maybe-options.ts'),
      [
        "import { defineStrategy } from 'indexbot';",
        "import { runBacktest, openCache, loadStrategy } from 'indexbot/backtest';",
        "import { startSandbox } from 'indexbot/sandbox';",
        'const maybe = process.env.MAYBE;',
        'const n = maybe === undefined ? undefined : Number(maybe);',
        "export const s = defineStrategy({ name: 'maybe', description: maybe, timeoutMs: n, on: {} });",
        "export const run = async () => runBacktest({ cache: openCache('x.db'), strategy: await loadStrategy('s.ts'), indexes: ['sindex'], from: 0, to: 1, cash: n, feeBps: n, interval: undefined, allowGaps: undefined });",
        'export const sandbox = () => startSandbox({ port: n, seed: n });',
      ].join('\n'),
    );
    writeFileSync(
      join(bot, 'tsconfig.libcheck.json'),
      JSON.stringify({ extends: './tsconfig.json', compilerOptions: { skipLibCheck: false, exactOptionalPropertyTypes: true }, include: ['entry-points.ts', 'readme-client.ts', 'maybe-options.ts'] }),
    );
    ok('npx', ['tsc', '-p', 'tsconfig.libcheck.json'], bot);
    expect(ok('npm', ['test'], bot)).toMatch(/2 passed/);
    expect(ok('node', ['-e', "import('indexbot').then(m => console.log(typeof m.defineStrategy))"], bot).trim()).toBe('function');
    const schema = JSON.parse(readFileSync(join(bot, 'node_modules/indexbot/config/indexbot.schema.json'), 'utf8')) as { properties: Record<string, unknown> };
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['baseUrl', 'strategies', 'tier']));
    expect(JSON.parse(readFileSync(join(bot, 'config/indexbot.json'), 'utf8')).$schema).toBe('../node_modules/indexbot/config/indexbot.schema.json');

    // A broken strategy in the project: the installed CLI names the file and the line.
    const broken = join(bot, 'broken-strategies');
    mkdirSync(broken);
    writeFileSync(
      join(broken, 'throws.ts'),
      "import { defineStrategy } from 'indexbot';\n\nconst limit = Number('x');\nif (Number.isNaN(limit)) throw new Error('limit is not a number');\nexport default defineStrategy({ name: 'throws', on: {} });\n",
    );
    const failed = run('npx', ['indexbot', 'run', '--strategies', 'broken-strategies'], bot);
    expect(failed.status).toBe(78);
    expect(failed.stderr).toContain('broken-strategies/throws.ts:4: failed to load: limit is not a number');

    // The bounded demo with the project's own strategy.
    const demo = ok('npm', ['start'], bot, { INDEXBOT_DEMO_DURATION_S: '45' }, 300_000);
    expect(demo).toMatch(/event {2}rebalance\.(announced|completed)/);
    expect(demo).toMatch(/fill {3}follow-rebalance: paper buy/);
    expect(demo).toMatch(/demo stopped \(duration reached\)/);
  });
});
