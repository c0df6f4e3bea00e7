import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Command, InvalidArgumentError } from 'commander';
import { IndexbotError, makeDirectories } from '../core/index.ts';
import { PACKAGE_ROOT, packageJson } from './package-files.ts';

const TEMPLATES = new URL('templates/', PACKAGE_ROOT);
const STRATEGY_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
/** npm leaves `.gitignore` out of a tarball: the template is stored under another name. */
const RENAMED: Record<string, string> = { _gitignore: '.gitignore', _dockerignore: '.dockerignore' };

/** `indexbot init [dir]` and `indexbot new-strategy NAME`: a user's own project, and strategies in it. */
export function registerProjectCommands(program: Command): void {
  program
    .command('init')
    .argument('[dir]', 'directory of the new project (created if missing)', '.')
    .description(
      'create a project for your strategies: package.json, tsconfig, an example strategy and its test, config; writes only new files (exit 78 and the name of a file that exists), but adds to a package.json there what it lacks',
    )
    .action((dir: string) => {
      const target = resolve(dir);
      // mkdir's EEXIST or ENOTDIR reached the last catch as a bug (trials 26 and 27): the target, or a folder on its way, is a file.
      let found = target;
      while (!existsSync(found) && dirname(found) !== found) found = dirname(found);
      if (!statSync(found).isDirectory()) {
        const what = found === target ? `${target} is a file` : `${found}, on the way to ${target}, is a file`;
        throw new IndexbotError(`${what}, not a directory; nothing was written (name a new or existing directory)`, 'FILE_EXISTS', 'operational');
      }
      const packagePath = join(target, 'package.json');
      const existing = existsSync(packagePath) ? readPackageJson(packagePath) : undefined;
      const name = typeof existing?.name === 'string' ? existing.name : npmName(basename(target));
      const files = templateFiles(new URL('project/', TEMPLATES)).map(([path, text]) => [path, text.replaceAll('__NAME__', name).replaceAll('__SERVICE__', serviceName(name))] as const);
      if (!existing) files.push(['package.json', `${JSON.stringify(projectPackageJson(name), null, 2)}\n`]);
      // Before anything is written: a project whose own JavaScript is CommonJS would break.
      if (existing) refuseCommonJsProject(packagePath, existing, target);
      writeNewFiles(target, files, 'move it away, or pick another directory');
      const out = [`created ${name} in ${target}`];
      if (existing) {
        const { merged, changes } = mergePackageJson(existing, projectPackageJson(name));
        writeFileSync(packagePath, `${JSON.stringify(merged, null, 2)}\n`);
        out.push(changes.length > 0 ? `package.json: ${changes.join('; ')}` : 'package.json: had all it needs');
        out.push(...keptConflicts(existing, target).map((c) => `note: ${c}`));
      }
      const cd = dir === '.' ? '' : dir;
      process.stdout.write(
        `${out.join('\n')}\nnext:\n${cd ? `  cd ${cd}\n` : ''}  npm install\n  npm start            # the demo with your strategies\n  npm test\n  npm run typecheck    # tsc over your strategies and tests\n`,
      );
    });

  program
    .command('new-strategy')
    .argument('<name>', 'lowercase slug, e.g. momentum-2', strategyName)
    .option('--dir <project>', 'the project (its strategies/ and test/)', '.')
    .description('add strategies/NAME.ts (a typed skeleton with its params schema) and test/NAME.test.ts; writes only new files')
    .action((name: string, opts: { dir: string }) => {
      const files = templateFiles(new URL('strategy/', TEMPLATES)).map(
        ([path, text]) => [path === 'strategy.ts' ? `strategies/${name}.ts` : `test/${name}.test.ts`, text.replaceAll('__NAME__', name)] as const,
      );
      writeNewFiles(resolve(opts.dir), files, 'pick another name, or move it away');
      process.stdout.write(`created ${files.map(([path]) => path).join(' and ')}\n`);
    });
}

function strategyName(raw: string): string {
  if (!STRATEGY_NAME.test(raw)) throw new InvalidArgumentError(`expected a lowercase slug like "momentum-2" (a-z, 0-9, -), got "${raw}"`);
  return raw;
}

/** The directory's name as an npm package name. */
function npmName(dir: string): string {
  return (
    dir
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[._-]+/, '') || 'my-indexbot'
  );
}

/** The package name as a systemd unit, directory and image name: no scope, `[a-z0-9-]` only (`@acme/Bot_1` -> `bot-1`). */
export function serviceName(packageName: string): string {
  return (
    packageName
      .replace(/^@[^/]*\//, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'indexbot'
  );
}

function projectPackageJson(name: string): PackageJson {
  const own = packageJson();
  const dev = own.devDependencies ?? {};
  return {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    scripts: {
      start: 'indexbot demo --strategies strategies',
      test: 'vitest run',
      typecheck: 'tsc --noEmit',
      backtest: 'indexbot backtest',
    },
    dependencies: { indexbot: `^${own.version}`, zod: own.dependencies.zod },
    devDependencies: { '@types/node': dev['@types/node'], typescript: dev.typescript, vitest: dev.vitest },
    engines: { node: '>=20.19' },
  };
}

type PackageJson = Record<string, unknown> & { scripts?: Record<string, string>; dependencies?: Record<string, string | undefined>; devDependencies?: Record<string, string | undefined> };

function readPackageJson(path: string): PackageJson {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new IndexbotError(`${path}: not valid JSON (${(e as Error).message}); nothing was written`, 'FILE_INVALID', 'operational');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new IndexbotError(`${path}: expected a JSON object; nothing was written`, 'FILE_INVALID', 'operational');
  return parsed as PackageJson;
}

/**
 * The generated strategies and tests are ES modules, so init sets `"type": "module"`. That
 * is harmless in a new project (npm 11's `npm init -y` writes `"commonjs"` by default), but
 * it would break a project's own CommonJS `.js` files: init then refuses, writing nothing.
 */
function refuseCommonJsProject(packagePath: string, existing: PackageJson, dir: string): void {
  if (existing.type === 'module') return;
  const own = ownJavaScriptFiles(dir);
  if (own.length === 0) return;
  throw new IndexbotError(
    `${packagePath}: "type" is ${existing.type === undefined ? 'unset (CommonJS)' : JSON.stringify(existing.type)} and the project has JavaScript files of its own (${own.join(', ')}); indexbot's strategies need "type": "module", which would break them: rename them .cjs, or run init in a directory of its own; nothing was written`,
    'PROJECT_COMMONJS',
    'operational',
  );
}

/** Up to three `.js` files of the project (not its packages or hidden folders), a few levels down. */
function ownJavaScriptFiles(dir: string, depth = 0, found: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (found.length >= 3) break;
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    if (entry.isDirectory() && depth < 3) ownJavaScriptFiles(join(dir, entry.name), depth + 1, found);
    else if (entry.isFile() && entry.name.endsWith('.js')) found.push(relative(process.cwd(), join(dir, entry.name)) || entry.name);
  }
  return found;
}

/** What init keeps of a project's own that does not fit what it writes: said, not changed. */
function keptConflicts(existing: PackageJson, dir: string): string[] {
  const notes: string[] = [];
  // The deploy files run npm ci on the project alone: a tarball beside it is not in the image or on the server (trial 35: init said nothing).
  const spec = existing.dependencies?.indexbot;
  if (spec?.startsWith('file:') && relative(resolve(dir), resolve(dir, spec.slice('file:'.length))).startsWith('..')) {
    notes.push(
      `indexbot "${spec}" is outside the project: deploy/Dockerfile and the systemd steps run npm ci on the project alone; copy it in and npm install it from there (npm install ./${basename(spec)})`,
    );
  }
  const zod = existing.dependencies?.zod ?? existing.devDependencies?.zod;
  const major = zod === undefined ? undefined : Number(/(\d+)/.exec(zod)?.[1]);
  if (major !== undefined && major < 4) notes.push(`zod ${zod} kept; indexbot's strategy params are zod 4 schemas (install zod@4)`);
  const test = existing.scripts?.test;
  if (test !== undefined && !NPM_PLACEHOLDER_TEST.test(test) && !test.includes('vitest')) notes.push(`scripts.test "${test}" kept; the generated test/*.test.ts run with vitest (npx vitest run)`);
  return notes;
}

/** What `npm init` puts in `scripts.test`: a placeholder, not a user's command. */
const NPM_PLACEHOLDER_TEST = /^echo "Error: no test specified" && exit 1$/;

/**
 * A project's own package.json with what ours has and it lacks: scripts (npm's placeholder
 * test replaced), dependencies it names in neither list (its own spec of indexbot, such as
 * the tarball it was installed from, stays), engines, and `"type": "module"` (the strategies
 * are ES modules). Nothing it sets is changed otherwise. Returns what changed, for the user.
 */
export function mergePackageJson(existing: PackageJson, ours: PackageJson): { merged: PackageJson; changes: string[] } {
  const merged: PackageJson = { ...existing };
  const changes: string[] = [];
  if (merged.type !== 'module') {
    changes.push(`type "module" (was ${merged.type === undefined ? 'unset' : JSON.stringify(merged.type)})`);
    merged.type = 'module';
  }
  const scripts = { ...merged.scripts };
  const addedScripts = Object.entries(ours.scripts ?? {}).filter(([k]) => scripts[k] === undefined || (k === 'test' && NPM_PLACEHOLDER_TEST.test(scripts[k]!)));
  for (const [k, v] of addedScripts) scripts[k] = v;
  if (addedScripts.length > 0) {
    merged.scripts = scripts;
    changes.push(`scripts ${addedScripts.map(([k]) => k).join(', ')}`);
  }
  for (const list of ['dependencies', 'devDependencies'] as const) {
    const missing = Object.entries(ours[list] ?? {}).filter(([k]) => merged.dependencies?.[k] === undefined && merged.devDependencies?.[k] === undefined);
    if (missing.length === 0) continue;
    merged[list] = { ...merged[list], ...Object.fromEntries(missing) };
    changes.push(`${list} ${missing.map(([k]) => k).join(', ')}`);
  }
  if (merged.engines === undefined && ours.engines !== undefined) {
    merged.engines = ours.engines;
    changes.push('engines');
  }
  return { merged, changes };
}

/** Every file under a template folder, as [path relative to it, text]. */
function templateFiles(rootUrl: URL): [string, string][] {
  const root = fileURLToPath(rootUrl);
  const out: [string, string][] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir).sort()) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else {
        const rel = relative(root, path);
        out.push([join(dirname(rel), RENAMED[basename(rel)] ?? basename(rel)), readFileSync(path, 'utf8')]);
      }
    }
  };
  walk(root);
  return out;
}

/** Writes all the files, or none: any that exist already stop it before anything is written, each named, with what to do (`remedy`). */
function writeNewFiles(target: string, files: readonly (readonly [string, string])[], remedy: string): void {
  const existing = files.map(([path]) => join(target, path)).filter((file) => existsSync(file));
  if (existing.length > 0) {
    const named = existing.length <= 2 ? existing.join(' and ') : `${existing[0]} and ${existing.length - 1} more of the files it writes`;
    throw new IndexbotError(`${named} already exist${existing.length === 1 ? 's' : ''}; nothing was written (${remedy})`, 'FILE_EXISTS', 'operational');
  }
  for (const [path, text] of files) {
    const file = join(target, path);
    makeDirectories(dirname(file));
    // The bot warns about a config others can read: it may come to hold a webhook secret.
    writeFileSync(file, text, { flag: 'wx', mode: path.startsWith('config') ? 0o600 : 0o666 });
  }
}
