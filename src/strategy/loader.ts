import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { findSourceMap } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { ConfigError, type Logger, StrategyError, describeIssues, escapeRegExp, secretValues, withoutSecrets } from '../core/index.ts';
import { EVENT_TYPES } from '../detect/index.ts';
import { type Strategy, isStrategy } from './define.ts';

export interface LoadedStrategy {
  strategy: Strategy;
  params: unknown;
  file: string;
}

export interface LoadOptions {
  /** Params per strategy name, from the config. */
  params?: Record<string, Record<string, unknown>> | undefined;
  /** Names not to run. */
  disabled?: string[] | undefined;
  /** `fail`: refuse to start on a bad strategy file; `skip`: start without it and say so. @default 'fail' */
  onError?: 'fail' | 'skip' | undefined;
  /** The directory was named explicitly (a missing one is then an error). */
  explicit?: boolean | undefined;
  /**
   * A name in `params` or `disabled` that no strategy file in the directory has (a typo, most
   * often): `fail` (a ConfigError), or `warn` where the config also speaks for strategies of
   * another directory. It only warns, too, when a file failed to load (it may be that one).
   * `ignore`: the params are a command's own defaults, not a user's config (the demo).
   * @default 'fail'
   */
  onUnknownName?: 'fail' | 'warn' | 'ignore' | undefined;
  logger: Logger;
}

const NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
/** A strategy's source file, by its name. */
export const STRATEGY_SOURCE = /\.(ts|mts|js|mjs)$/;
const TYPESCRIPT = /\.m?ts$/;
/** What a strategy that declares no params gets: nothing, and a config that sets some is told so. */
const NO_PARAMS = z.strictObject({});

/** Loads every strategy module in `dir`: TypeScript through tsx, no build step. */
export async function loadStrategies(dir: string, o: LoadOptions): Promise<LoadedStrategy[]> {
  if (!existsSync(dir)) {
    if (o.explicit) throw new ConfigError(`strategies directory ${dir} does not exist`);
    return [];
  }
  const files = strategyFiles(dir);
  const loaded: LoadedStrategy[] = [];
  // Every strategy the directory holds, disabled ones too: the names the config may use.
  const names: string[] = [];
  let skipped = 0;
  for (const file of files) {
    try {
      const strategy = await loadStrategyModule(file);
      names.push(strategy.name);
      if (o.disabled?.includes(strategy.name)) continue;
      const one = withParams(strategy, file, o.params?.[strategy.name] ?? {});
      const clash = loaded.find((l) => l.strategy.name === one.strategy.name);
      if (clash) throw new StrategyError(`${file}: strategy name "${one.strategy.name}" is already used by ${clash.file}`, 'STRATEGY_LOAD');
      loaded.push(one);
    } catch (e) {
      if (!(e instanceof StrategyError) || o.onError !== 'skip') throw e;
      skipped++;
      o.logger.warn({ file, error: e.message }, `skipping ${file}, which failed to load: ${e.message}`);
    }
  }
  checkConfiguredNames(o, dir, names, skipped > 0);
  return loaded;
}

/** The strategy files of a directory (not tests, declarations, or names starting with `_` or `.`), in name order. */
export function strategyFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => STRATEGY_SOURCE.test(f) && !f.endsWith('.d.ts') && !/\.(test|spec)\./.test(f) && !f.startsWith('_') && !f.startsWith('.'))
    .sort()
    .map((f) => join(dir, f));
}

/** The strategy file of `dir` whose name, less its extension, is `stem`. */
export function strategyFileNamed(dir: string, stem: string): string | undefined {
  return existsSync(dir) ? strategyFiles(dir).find((f) => basename(f).replace(STRATEGY_SOURCE, '') === stem) : undefined;
}

/**
 * Every name in `params` and `disabled` must be one of `names`, the strategies in `dir`: a
 * misspelled one would otherwise be ignored without a word. Unsure (`uncertain`: a file in
 * the directory failed to load, it may be that one) or told to (`onUnknownName: 'warn'`), it
 * only warns.
 */
export function checkConfiguredNames(o: Pick<LoadOptions, 'params' | 'disabled' | 'onUnknownName' | 'logger'>, dir: string, names: readonly string[], uncertain = false): void {
  if (o.onUnknownName === 'ignore') return;
  const unknown = [
    ...Object.keys(o.params ?? {})
      .filter((n) => !names.includes(n))
      .map((n) => `strategies.params "${n}"`),
    ...(o.disabled ?? []).filter((n) => !names.includes(n)).map((n) => `strategies.disabled "${n}"`),
  ];
  if (unknown.length === 0) return;
  const message = `${unknown.join('; ')}: no such strategy in ${dir} (found ${names.join(', ') || 'none'})`;
  if (o.onUnknownName === 'warn' || uncertain) o.logger.warn({ dir, unknown }, message);
  else throw new ConfigError(message);
}

/** A strategy file and its params, validated by its schema (what `runBacktest` takes). */
export async function loadStrategy(file: string, params: unknown = {}): Promise<LoadedStrategy> {
  return withParams(await loadStrategyModule(file), file, params);
}

/**
 * The same loaded strategy with other params, checked by its schema as `loadStrategy` checks
 * them. A search from code loads the file once and calls this per set: each `loadStrategy`
 * imports the file afresh, and Node keeps every module it has imported (trial 37: 25-30 KB
 * of heap per call, 0.5 GB over 20,000 trials).
 */
export function strategyWithParams(loaded: LoadedStrategy, params: unknown): LoadedStrategy {
  return withParams(loaded.strategy, loaded.file, params);
}

/**
 * Imports one strategy file, afresh each call (watch mode reloads a changed file), and
 * checks that it exports a well-formed strategy. Every error names the file, and the line
 * when the error points into it.
 */
export async function loadStrategyModule(file: string): Promise<Strategy> {
  let mod: { default?: unknown };
  try {
    mod = (await importFresh(resolve(file))) as { default?: unknown };
  } catch (e) {
    const where = lineIn(resolve(file), e) || (e instanceof SyntaxError ? syntaxErrorLine(resolve(file)) : '');
    // Not in the file itself: in a helper of the user's it imports, which is then named too.
    const helper = where === '' ? helperLine(resolve(file), e) : '';
    throw new StrategyError(`${file}${where}: failed to load: ${helper === '' ? '' : `${helper}: `}${reason(e)}${commonJsHint(file)}`, 'STRATEGY_LOAD');
  }
  const strategy = mod.default;
  if (!isStrategy(strategy)) {
    const hint = commonJsHint(file);
    throw new StrategyError(hint === '' ? `${file}: exports no strategy; it needs \`export default defineStrategy({ ... })\`` : `${file}: loaded as CommonJS${hint}`, 'STRATEGY_LOAD');
  }
  if (typeof strategy.name !== 'string' || !NAME.test(strategy.name)) {
    throw new StrategyError(`${file}: strategy name must be a lowercase slug, got ${JSON.stringify(strategy.name)}`, 'STRATEGY_LOAD');
  }
  if (strategy.params !== undefined && typeof (strategy.params as { safeParse?: unknown }).safeParse !== 'function') {
    throw new StrategyError(`${file}: params of "${strategy.name}" must be a zod schema, e.g. z.object({ ... })`, 'STRATEGY_LOAD');
  }
  if (typeof strategy.on !== 'object' || strategy.on === null) {
    throw new StrategyError(`${file}: "${strategy.name}" has no \`on\` object of event handlers`, 'STRATEGY_LOAD');
  }
  // TypeScript refuses these; a JavaScript strategy's handler for a misspelt type would never run, without a word.
  for (const [type, handler] of Object.entries(strategy.on)) {
    if (!(EVENT_TYPES as readonly string[]).includes(type)) {
      throw new StrategyError(`${file}: "${strategy.name}" handles "${type}", which is no event type (${EVENT_TYPES.join(', ')})`, 'STRATEGY_LOAD');
    }
    if (typeof handler !== 'function') throw new StrategyError(`${file}: "${strategy.name}": the handler for "${type}" is not a function`, 'STRATEGY_LOAD');
  }
  return strategy;
}

/**
 * Why a strategy may have failed as it did: a `.ts` or `.js` file under a package.json whose
 * "type" is not "module" loads as CommonJS, where its `export default` is no default export
 * and a helper's types are a syntax error. npm 11's `npm init -y` writes "commonjs", and the
 * errors said "exports no strategy" of a file that does (trial 26). '' when that is not it.
 */
function commonJsHint(file: string): string {
  if (!/\.(ts|js|tsx|jsx)$/.test(file)) return '';
  for (let dir = dirname(resolve(file)); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      let type: unknown;
      try {
        type = (JSON.parse(readFileSync(manifest, 'utf8')) as { type?: unknown }).type;
      } catch {
        return '';
      }
      return type === 'module'
        ? ''
        : `; ${manifest} says "type": ${type === undefined ? 'nothing (CommonJS)' : JSON.stringify(type)}, and strategies are ES modules: set "type": "module" there (\`npx indexbot init .\` does), or name the file .${/\.[jt]sx?$/.exec(file)![0].startsWith('.t') ? 'mts' : 'mjs'}`;
    }
    if (dirname(dir) === dir) return '';
  }
}

let generation = 0;

/**
 * ESM caches a module by URL, so each load asks for the file with a new `indexbot-load`
 * query. TypeScript goes through tsx, in one namespace per thread, and a resolve hook makes
 * the rest of the import graph follow that rule: the user's own files (relative, absolute
 * and `#` imports outside node_modules) get the load's query, so a changed helper is read
 * afresh; packages resolved to JavaScript (zod, an installed indexbot) lose the namespace,
 * so the strategy shares the instances the engine runs instead of evaluating them again on
 * every load (each load used to cost its own copy of zod and indexbot, in memory for good).
 * tsx is imported only when a TypeScript file is, so the installed CLI starts on plain Node.
 */
async function importFresh(path: string): Promise<unknown> {
  const url = `${pathToFileURL(path).href}?${LOAD_QUERY}=${++generation}`;
  if (!TYPESCRIPT.test(path)) {
    // A JavaScript strategy's helpers are read afresh too.
    await resolveHook();
    return import(url);
  }
  // tsx's output carries inline source maps: with them, errors and stacks name the lines of the user's own file.
  process.setSourceMapsEnabled(true);
  return (await typescriptImporter())(url, import.meta.url);
}

const LOAD_QUERY = 'indexbot-load';
/** The query a loaded file's URL carries in stacks: not part of its path. */
export const LOADER_QUERY = /\?(indexbot-load|tsx-namespace)=[^:)\s]*/g;

/** Applied after tsx's own resolve (hooks registered later run first), in the loader's thread. */
const RESOLVE_HOOK = `
const LOAD = ${JSON.stringify(LOAD_QUERY)};
const LOCAL = /^(\\.{1,2}\\/|\\/|#|file:)/;
const JAVASCRIPT = /\\.(c|m)?js(on)?$/;
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (!resolved.url.startsWith('file:')) return resolved;
  const url = new URL(resolved.url);
  if (!LOCAL.test(specifier)) {
    if (!JAVASCRIPT.test(url.pathname) || !url.searchParams.has('tsx-namespace')) return resolved;
    url.searchParams.delete('tsx-namespace');
    return { ...resolved, url: url.href };
  }
  const load = context.parentURL && new URL(context.parentURL).searchParams.get(LOAD);
  if (!load || url.searchParams.has(LOAD) || url.pathname.includes('/node_modules/')) return resolved;
  url.searchParams.set(LOAD, load);
  return { ...resolved, url: url.href };
}`;

const registerResolveHook = () => import('node:module').then(({ register }) => register(`data:text/javascript,${encodeURIComponent(RESOLVE_HOOK)}`));

let hook: Promise<void> | undefined;

/** For JavaScript strategies, once per thread. */
function resolveHook(): Promise<void> {
  hook ??= registerResolveHook();
  return hook;
}

let importer: Promise<(specifier: string, parentURL: string) => Promise<unknown>> | undefined;

/**
 * tsx, then the hook once more, whatever was loaded before: hooks registered later run first,
 * and the hook must see what tsx resolved. A copy registered earlier for JavaScript then runs
 * inside tsx's, and does nothing the outer one has not (it adds the query only once).
 */
function typescriptImporter(): Promise<(specifier: string, parentURL: string) => Promise<unknown>> {
  importer ??= (async () => {
    const { register: registerTsx } = await import('tsx/esm/api');
    const tsx = registerTsx({ namespace: 'indexbot-strategies' });
    await registerResolveHook();
    return tsx.import;
  })();
  return importer;
}

/** Node's syntax error in an ES module carries no line; `node --check` prints it (only this failure pays for the process). */
function syntaxErrorLine(path: string): string {
  const check = spawnSync(process.execPath, ['--check', path], { encoding: 'utf8', timeout: 10_000 });
  return lineIn(path, check.stderr ?? '');
}

/** `:line` when the error's message or stack points at a line and column of `path` (a syntax error, a throw at import). */
function lineIn(path: string, e: unknown): string {
  const text = e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e);
  for (const prefix of [pathToFileURL(path).href, path]) {
    const here = `${escapeRegExp(prefix)}(?:\\?[^:\\s]*)?:(\\d+)`;
    // A stack frame or a transform error says file:line:column; Node's own syntax error opens its stack with file:line.
    const at = new RegExp(`${here}:\\d+`).exec(text) ?? new RegExp(`^${here}$`, 'm').exec(text);
    if (at) return `:${at[1]}`;
  }
  return '';
}

/** indexbot's own source (src/ in a checkout, dist/ installed): its frames are not the user's. */
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** A location in a source file: a path or file URL (with the loader's query, or not), a line, and a column or not. */
const FILE_LINE = /((?:file:\/\/)?\/[^\s:()'"?]+\.[cm]?[jt]s(?:\?[^\s:()]*)?):(\d+)(?::(\d+))?/g;

/** `path:line` of the first place the error points to in another source file of the user's (outside node_modules and indexbot), or ''. */
function helperLine(path: string, e: unknown): string {
  const text = e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e);
  for (const [, at, line, column] of text.matchAll(FILE_LINE)) {
    const [, file, original] = /^(.*):(\d+):\d+$/.exec(sourceLocation(`${at}:${line}:${column ?? 1}`))!;
    if (file === path || file!.includes('/node_modules/') || file!.startsWith(`${PACKAGE_ROOT}src/`) || file!.startsWith(`${PACKAGE_ROOT}dist/`)) continue;
    return `${file}:${original}`;
  }
  return '';
}

/**
 * `path:line:column` in a user's source. The loader imports each copy under its own URL (a
 * query), and where a test runner's stack formatting skips source maps, a frame is still in
 * tsx's output: its inline source map gives the line back.
 */
export function sourceLocation(frame: string): string {
  const at = /^(.*?):(\d+):(\d+)$/.exec(frame);
  if (!at) return frame;
  const url = at[1]!.startsWith('file://') ? at[1]! : pathToFileURL(at[1]!.replace(/\?.*$/, '')).href + (at[1]!.match(/\?.*$/)?.[0] ?? '');
  const entry = findSourceMap(url)?.findEntry(Number(at[2]) - 1, Number(at[3]) - 1) as { originalLine?: number; originalColumn?: number } | undefined;
  const path = fileURLToPath(url.replace(/\?.*$/, ''));
  return entry?.originalLine === undefined ? `${path}:${at[2]}:${at[3]}` : `${path}:${entry.originalLine + 1}:${(entry.originalColumn ?? 0) + 1}`;
}

/** The error's own words, without the tool's preamble or the location already named. */
function reason(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  const all = message
    .split('\n')
    .map((l) => l.replace(/^.*?:\d+:\d+: (ERROR: )?/, '').trim())
    .filter((l) => l !== '' && !/^Transform failed with \d+ errors?:$/.test(l));
  // Node's "Require stack:" and the paths under it repeat the file already named.
  const stack = all.findIndex((l) => /^Require stack:$/.test(l));
  const lines = stack === -1 ? all : all.slice(0, stack);
  // Found by a trial: a strategy kept outside any project that installs indexbot.
  if (/^Cannot find (module|package) 'indexbot'/.test(lines[0] ?? '')) {
    lines.splice(0, lines.length, `${lines[0]}: no node_modules/indexbot beside the file or above it; keep strategies in a project that installs indexbot (npx indexbot init makes one)`);
  }
  // A strategy's own message may quote a credential it read: every place the error goes (the CLI, doctor, logs) gets it without.
  return withoutSecrets(lines.slice(0, 2).join(' '), secretValues());
}

/** Params a strategy's schema refused, with the top-level keys at fault, so a caller can tell which of its sources gave them. */
export class ParamsError extends StrategyError {
  constructor(
    message: string,
    readonly keys: readonly string[],
  ) {
    super(message, 'STRATEGY_PARAMS');
  }
}

/** The strategy with `raw` params validated by its schema (a sweep calls this once per parameter set). */
export function withParams(strategy: Strategy, file: string, raw: unknown): LoadedStrategy {
  const schema = strategy.params ?? NO_PARAMS;
  // A misspelt key would otherwise be dropped without a word and the default used: refuse
  // keys the schema does not name, whether or not the author wrote a strict object.
  const shape = (schema as { shape?: unknown }).shape;
  const known = typeof shape === 'object' && shape !== null ? Object.keys(shape) : undefined;
  const unknown = known && typeof raw === 'object' && raw !== null ? Object.keys(raw).filter((k) => !known.includes(k)) : [];
  if (unknown.length > 0) {
    throw new ParamsError(
      `${file}: params of "${strategy.name}" are invalid: unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')} (known: ${known!.join(', ') || 'none'})`,
      unknown,
    );
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    // A check of the whole object (a refine) has no key: '' stands for it.
    const keys = [...new Set(parsed.error.issues.map((i) => String(i.path[0] ?? '')))];
    throw new ParamsError(`${file}: params of "${strategy.name}" are invalid: ${describeIssues(parsed.error)}`, keys);
  }
  return { strategy, params: Object.freeze(parsed.data), file };
}
