import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SnapshotStore } from '../../src/store/index.ts';
import { StrategyRuntime, loadStrategies, watchStrategies } from '../../src/strategy/index.ts';
import { performanceUpdated } from '../../src/testing/index.ts';
import { captureLogger } from '../helpers/fake-transport.ts';

const project = mkdtempSync(join(tmpdir(), 'indexbot-watch-'));
mkdirSync(join(project, 'node_modules'));
symlinkSync(resolve('.'), join(project, 'node_modules', 'indexbot'), 'dir');
writeFileSync(join(project, 'package.json'), '{"type":"module"}');
const dir = join(project, 'strategies');
mkdirSync(dir);
afterAll(() => rmSync(project, { recursive: true, force: true }));

/** A strategy that records which version of its code saw each event. */
const version = (v: string) => `import { defineStrategy } from 'indexbot';
export default defineStrategy({
  name: 'versioned',
  on: {
    'performance.updated': (event, ctx) => {
      ctx.state.set('seen', [...(ctx.state.get<string[]>('seen') ?? []), '${v}:' + event.payload.nav]);
    },
  },
});
`;

async function until(what: string, check: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The strategies of `dir` loaded, run and watched, as `indexbot run --watch` does; `deliver` appends a performance update and waits for it to be handled. */
async function watching(dir: string) {
  const { logger, lines } = captureLogger();
  const loaded = await loadStrategies(dir, { logger });
  const store = SnapshotStore.open(':memory:');
  const runtime = new StrategyRuntime({ store, strategies: loaded, logger });
  const watcher = watchStrategies({ dir, loaded, params: {}, runtime, logger, settleMs: 50 });
  return {
    lines,
    store,
    async deliver(nav: number) {
      store.appendEvents([performanceUpdated({ nav, at: Date.UTC(2026, 0, 1, nav) })].map(({ seq: _seq, ...e }) => e));
      await runtime.drain();
    },
    async close() {
      watcher.close();
      await runtime.stop();
      store.close();
    },
  };
}

describe('watch mode', () => {
  it('runs the next event on the changed file, keeps state and cursor, and keeps the old code when an edit breaks it', async () => {
    const file = join(dir, 'versioned.ts');
    writeFileSync(file, version('v1'));
    const { lines, store, deliver, close } = await watching(dir);
    const seen = () => store.strategies.stateEntries('versioned').get('seen');
    try {
      await deliver(1);
      expect(seen()).toEqual(['v1:1']);

      writeFileSync(file, version('v2'));
      await until('the reload', () => lines.some((l) => l.includes('reloaded versioned')));
      await deliver(2);
      expect(seen()).toEqual(['v1:1', 'v2:2']);

      writeFileSync(file, version('v3').replace("name: 'versioned',", "name: 'versioned',\n  on: ,"));
      await until('the failed reload', () => lines.some((l) => l.includes('kept the running version of \\"versioned\\"')));
      await deliver(3);
      expect(seen()).toEqual(['v1:1', 'v2:2', 'v2:3']);
      const failure = lines.find((l) => l.includes('kept the running version'))!;
      expect(failure).toContain(`${file}:4: failed to load`);
      expect(store.cursor('strategy:versioned')).toBe(3);
    } finally {
      await close();
    }
  });
});

describe('watch mode and helpers', () => {
  it('reloads when a helper in a subfolder changes, and the params follow the new schema', async () => {
    const dir = join(project, 'strategies-with-helpers');
    const helpers = join(dir, 'lib');
    mkdirSync(helpers, { recursive: true });
    symlinkSync(resolve('node_modules/zod'), join(project, 'node_modules', 'zod'), 'dir');
    writeFileSync(join(helpers, 'label.ts'), "export const LABEL = 'a';\n");
    const file = join(dir, 'labelled.ts');
    writeFileSync(
      file,
      `import { defineStrategy } from 'indexbot';
import { z } from 'zod';
import { LABEL } from './lib/label.ts';
export default defineStrategy({
  name: 'labelled',
  params: z.object({ label: z.string().default(LABEL) }),
  on: { 'performance.updated': (event, ctx) => ctx.state.set('seen', [...(ctx.state.get<string[]>('seen') ?? []), ctx.params.label + ':' + event.payload.nav]) },
});
`,
    );
    const { lines, store, deliver, close } = await watching(dir);
    try {
      await deliver(1);
      writeFileSync(join(helpers, 'label.ts'), "export const LABEL = 'b';\n");
      await until('the reload', () => lines.some((l) => l.includes('reloaded labelled')));
      await deliver(2);
      expect(store.strategies.stateEntries('labelled').get('seen')).toEqual(['a:1', 'b:2']);
    } finally {
      await close();
    }
  });
});

describe('watch mode and editors that save by rename', () => {
  it('reloads at every save, whether written in place or as a new file renamed over the old one (sed -i, many editors)', async () => {
    const dir = join(project, 'strategies-renamed');
    mkdirSync(dir);
    const file = join(dir, 'versioned.ts');
    writeFileSync(file, version('v1'));
    const { lines, store, deliver, close } = await watching(dir);
    const reloads = () => lines.filter((l) => l.includes('reloaded versioned')).length;
    const saveByRename = (code: string) => {
      // As sed -i does: a temporary file beside it (no source extension), renamed over it.
      const temporary = join(dir, 'sedAb12Cd');
      writeFileSync(temporary, code);
      renameSync(temporary, file);
    };
    try {
      await deliver(1);
      saveByRename(version('v2'));
      await until('the first reload', () => reloads() === 1);
      await deliver(2);
      // A watch on the file itself heard nothing after the first such save.
      saveByRename(version('v3'));
      await until('the second reload', () => reloads() === 2);
      await deliver(3);
      writeFileSync(file, version('v4'));
      await until('the third reload', () => reloads() === 3);
      await deliver(4);
      expect(store.strategies.stateEntries('versioned').get('seen')).toEqual(['v1:1', 'v2:2', 'v3:3', 'v4:4']);
      // A folder made after the start is watched; removed and made again, it is watched anew.
      const lib = join(dir, 'lib');
      mkdirSync(lib);
      await new Promise((r) => setTimeout(r, 100));
      writeFileSync(join(lib, 'helper.ts'), 'export const A = 1;\n');
      await until('the reload for a helper in a new folder', () => reloads() === 4);
      rmSync(lib, { recursive: true });
      // The removal of the helper reloads too; what follows must reload once more.
      await until('the reload for the removed helper', () => reloads() === 5);
      await new Promise((r) => setTimeout(r, 200));
      const before = reloads();
      mkdirSync(lib);
      await new Promise((r) => setTimeout(r, 100));
      writeFileSync(join(lib, 'helper.ts'), 'export const A = 2;\n');
      await until('the reload for a helper in the folder made again', () => reloads() > before);
    } finally {
      await close();
    }
  });
});
