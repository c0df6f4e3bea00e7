import { type FSWatcher, readdirSync, statSync, watch } from 'node:fs';
import { join, resolve, sep } from 'node:path';
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

  const tree = watchTree(o.dir, (file) => {
    if (!STRATEGY_SOURCE.test(file) || file.endsWith('.d.ts')) return;
    changed.add(resolve(file));
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
      tree.close();
    },
  };
}

/**
 * Calls `onChange` with the path of each entry changed, created, removed or renamed in `dir`
 * and its subfolders (helpers kept in a folder of their own, such as strategies/lib/), but
 * node_modules. One watcher per folder, not per file: a file an editor saves by writing a
 * new one and renaming it over the old (sed -i, many editors) is a new inode, which a watch
 * on the old file never hears of again. Node 20's recursive watch on Linux watches each file,
 * and so missed every save after the first such one.
 */
function watchTree(dir: string, onChange: (file: string) => void): { close(): void } {
  const watchers = new Map<string, FSWatcher>();
  const add = (folder: string, top = false) => {
    if (watchers.has(folder)) return;
    let subfolders: string[];
    try {
      const watcher = watch(folder, (_event, name) => {
        if (!name) return;
        const path = join(folder, name);
        if (isFolder(path)) add(path);
        else forget(path);
        onChange(path);
      });
      watcher.on('error', () => forget(folder));
      watchers.set(folder, watcher);
      subfolders = readdirSync(folder, { withFileTypes: true })
        .filter((entry) => entry.isDirectory() && entry.name !== 'node_modules')
        .map((entry) => join(folder, entry.name));
    } catch (e) {
      if (top) throw e;
      // A subfolder gone before it could be read (made and removed at once).
      forget(folder);
      return;
    }
    for (const sub of subfolders) add(sub);
  };
  // A folder removed (or no folder any more): its watchers end; made again, its parent's event adds it back.
  const forget = (path: string) => {
    for (const [folder, watcher] of watchers) {
      if (folder === path || folder.startsWith(path + sep)) {
        watcher.close();
        watchers.delete(folder);
      }
    }
  };
  add(dir, true);
  return {
    close() {
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory() && !path.split(/[/\\]/).includes('node_modules');
  } catch {
    return false;
  }
}
