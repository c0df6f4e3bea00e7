import { type FSWatcher, watch } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from '../core/index.ts';
import { type LoadedStrategy, STRATEGY_SOURCE, loadStrategyModule, withParams } from './loader.ts';
import type { StrategyRuntime } from './runtime.ts';

export interface WatchOptions {
  dir: string;
  /** The strategies running now; each is reloaded from its file. */
  loaded: readonly LoadedStrategy[];
  /** Params per strategy name, from the config. */
  params: Record<string, Record<string, unknown>>;
  runtime: Pick<StrategyRuntime, 'replace'>;
  logger: Logger;
  /** Told of each reload: the strategy's name, and why it was refused when it was. */
  onReload?: (strategy: string, refused?: string) => void;
  /** Quiet time after the last change before reloading: an editor's save is several writes. @default 100 */
  settleMs?: number;
}

/**
 * Watch mode: reloads a strategy whose file changed and hands it to the runtime, which runs
 * it from the next event on, with its params validated again by the new file's schema. A
 * change to any other source file in the folder or its subfolders (a helper a strategy
 * imports) reloads them all. A file that fails to load or validate leaves the
 * running version in place, and the log says why.
 */
export function watchStrategies(o: WatchOptions): { close(): void } {
  const files = new Map(o.loaded.map((l) => [resolve(l.file), l.strategy.name]));
  const settleMs = o.settleMs ?? 100;
  const changed = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let reloading = Promise.resolve();

  const reload = async (batch: string[]) => {
    const targets = batch.every((f) => files.has(f)) ? batch : [...files.keys()];
    for (const file of targets) {
      const name = files.get(file)!;
      try {
        const strategy = await loadStrategyModule(file);
        if (strategy.name !== name) {
          const why = `the file now names a strategy "${strategy.name}"; restart to rename`;
          o.logger.error({ file, name: strategy.name, running: name }, `kept the running version of "${name}": ${why}`);
          o.onReload?.(name, why);
          continue;
        }
        o.runtime.replace(withParams(strategy, file, o.params[name] ?? {}));
        o.logger.info({ file, strategy: name }, `reloaded ${name}; the next event reaches the new code`);
        o.onReload?.(name);
      } catch (e) {
        o.logger.error({ file, strategy: name, error: (e as Error).message }, `kept the running version of "${name}": ${(e as Error).message}`);
        o.onReload?.(name, (e as Error).message);
      }
    }
  };

  // Recursive: helpers kept in a folder of their own (strategies/lib/) count too.
  const watcher: FSWatcher = watch(o.dir, { recursive: true }, (_event, filename) => {
    if (!filename || !STRATEGY_SOURCE.test(filename) || filename.endsWith('.d.ts') || filename.split(/[/\\]/).includes('node_modules')) return;
    changed.add(resolve(join(o.dir, filename)));
    clearTimeout(timer);
    timer = setTimeout(() => {
      const batch = [...changed];
      changed.clear();
      reloading = reloading.then(() => reload(batch));
    }, settleMs);
  });
  o.logger.info({ dir: o.dir, strategies: [...files.values()] }, 'watching strategy files; a change reloads without a restart');
  return {
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
