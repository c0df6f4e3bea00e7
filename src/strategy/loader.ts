import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { ConfigError, type Logger, StrategyError } from '../core/index.ts';
import { type Strategy, isStrategy } from './define.ts';

export interface LoadedStrategy {
  strategy: Strategy;
  params: unknown;
  file: string;
}

export interface LoadOptions {
  /** Params per strategy name, from the config. */
  params?: Record<string, Record<string, unknown>>;
  /** Names not to run. */
  disabled?: string[];
  /** `fail`: refuse to start on a bad strategy file; `skip`: start without it and say so. @default 'fail' */
  onError?: 'fail' | 'skip';
  /** The directory was named explicitly (a missing one is then an error). */
  explicit?: boolean;
  logger: Logger;
}

const NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
const SOURCE = /\.(ts|mts|js|mjs)$/;

/** Loads every strategy module in `dir` (TypeScript needs no build step: the CLI runs under tsx). */
export async function loadStrategies(dir: string, o: LoadOptions): Promise<LoadedStrategy[]> {
  if (!existsSync(dir)) {
    if (o.explicit) throw new ConfigError(`strategies directory ${dir} does not exist`);
    return [];
  }
  const files = readdirSync(dir)
    .filter((f) => SOURCE.test(f) && !f.endsWith('.d.ts') && !/\.(test|spec)\./.test(f) && !f.startsWith('_') && !f.startsWith('.'))
    .sort();
  const loaded: LoadedStrategy[] = [];
  for (const name of files) {
    const file = join(dir, name);
    try {
      const one = await loadOne(file, o);
      if (!one) continue;
      const clash = loaded.find((l) => l.strategy.name === one.strategy.name);
      if (clash) throw new StrategyError(`${file}: strategy name "${one.strategy.name}" is already used by ${clash.file}`, 'STRATEGY_LOAD');
      loaded.push(one);
    } catch (e) {
      if (!(e instanceof StrategyError) || o.onError !== 'skip') throw e;
      o.logger.warn({ file, error: e.message }, 'skipping a strategy that failed to load (onError: skip)');
    }
  }
  return loaded;
}

async function loadOne(file: string, o: LoadOptions): Promise<LoadedStrategy | undefined> {
  const strategy = await loadStrategyModule(file);
  if (o.disabled?.includes(strategy.name)) return undefined;
  return withParams(strategy, file, o.params?.[strategy.name] ?? {});
}

/** Imports one strategy file and checks that it exports a well-named strategy. */
export async function loadStrategyModule(file: string): Promise<Strategy> {
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(resolve(file)).href)) as { default?: unknown };
  } catch (e) {
    throw new StrategyError(`${file}: failed to load: ${firstLine((e as Error).message)}`, 'STRATEGY_LOAD');
  }
  const strategy = mod.default;
  if (!isStrategy(strategy)) {
    throw new StrategyError(`${file}: exports no strategy; it needs \`export default defineStrategy({ ... })\``, 'STRATEGY_LOAD');
  }
  if (typeof strategy.name !== 'string' || !NAME.test(strategy.name)) {
    throw new StrategyError(`${file}: strategy name must be a lowercase slug, got ${JSON.stringify(strategy.name)}`, 'STRATEGY_LOAD');
  }
  return strategy;
}

/** The strategy with `raw` params validated by its schema (a sweep calls this once per parameter set). */
export function withParams(strategy: Strategy, file: string, raw: unknown): LoadedStrategy {
  const parsed = strategy.params.safeParse(raw);
  if (!parsed.success) {
    throw new StrategyError(`${file}: params of "${strategy.name}" are invalid: ${z.prettifyError(parsed.error).replace(/\n/g, '; ')}`, 'STRATEGY_PARAMS');
  }
  return { strategy, params: Object.freeze(parsed.data), file };
}

function firstLine(text: string): string {
  return text.split('\n').slice(0, 3).join(' ').trim();
}
