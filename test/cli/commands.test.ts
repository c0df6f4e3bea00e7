import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'indexbot-commands-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A loader hook that writes down every module the CLI process loads.
const hook = join(dir, 'hook.mjs');
writeFileSync(hook, "import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) { appendFileSync(process.env.LOADED_LIST, url + '\\n'); return next(url, context); }\n");
const registerHook = join(dir, 'register.mjs');
writeFileSync(registerHook, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hook).href)});\n`);

function cli(args: string[]) {
  const list = join(dir, `loaded-${args.join('_').replace(/\W/g, '')}.txt`);
  writeFileSync(list, '');
  const r = spawnSync(process.execPath, ['--import', registerHook, 'bin/indexbot.js', ...args], { env: { ...process.env, LOADED_LIST: list }, encoding: 'utf8' });
  const loaded = readFileSync(list, 'utf8').split('\n').filter(Boolean);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, loadedFolders: new Set(loaded.flatMap((url) => /\/src\/([^/]+)\//.exec(url)?.[1] ?? [])) };
}

const COMMANDS = [
  'demo',
  'run',
  'status',
  'login',
  'backfill',
  'backtest',
  'check-lookahead',
  'walk-forward',
  'optimize',
  'doctor',
  'strategies',
  'forget',
  'sandbox',
  'init',
  'new-strategy',
  'config',
];

describe('the CLI loads each command on demand', () => {
  it('lists every command in --help, in order, and suggests the nearest for a typo', () => {
    const help = cli(['--help']);
    expect(help.status).toBe(0);
    const listed = [...help.stdout.matchAll(/^ {2}([a-z-]+)( \[options\]| <[a-z]+>|\s)/gm)].map((m) => m[1]).filter((name) => name !== 'help');
    expect(listed).toEqual(COMMANDS);

    const typo = cli(['stauts']);
    expect(typo.status).toBe(64);
    expect(typo.stderr).toBe("indexbot: unknown command 'stauts' (Did you mean status?) [USAGE_INVALID]\n");
  });

  it('names a mistyped flag, with the nearest, before the required flag it was meant to be (trial 24)', () => {
    const typo = cli(['backtest', '--stratgy', 'x']);
    expect(typo.status).toBe(64);
    expect(typo.stderr).toBe("indexbot: unknown option '--stratgy' (Did you mean --strategy?) [USAGE_INVALID]\n");
    const missing = cli(['backtest', '--from', '2026-01-01']);
    expect(missing.status).toBe(64);
    expect(missing.stderr).toBe("indexbot: required option '--strategy <name|path>' not specified [USAGE_INVALID]\n");
    const optimize = cli(['optimize', '--strategy', 'x', '--spaec', 'space.json', '--trials', '3']);
    expect(optimize.stderr).toBe("indexbot: unknown option '--spaec' (Did you mean --space?) [USAGE_INVALID]\n");
  });

  it('says every default in --help as a user types or reads it, never as an object', () => {
    for (const command of COMMANDS) {
      const help = cli([command, '--help']);
      expect(help.status, command).toBe(0);
      expect(help.stdout, command).not.toMatch(/\(default: [{[]|\[object Object\]/);
    }
  });

  it('loads only what the named command runs: init no store, status no sandbox, backtest or HTTP server', () => {
    const init = cli(['init', '--help']);
    expect(init.status).toBe(0);
    expect(init.stdout).toContain('Usage: indexbot init');
    expect([...init.loadedFolders].filter((f) => ['store', 'sandbox', 'backtest', 'research', 'http', 'api'].includes(f))).toEqual([]);

    const status = cli(['status', '--db', join(dir, 'missing', 'x.db')]);
    expect(status.status).toBe(78);
    expect(status.stderr).toMatch(/^indexbot: no database at .*missing\/x\.db.*\[STORE_UNAVAILABLE\]\n$/);
    expect(status.loadedFolders).toContain('store');
    expect([...status.loadedFolders].filter((f) => ['sandbox', 'backtest', 'research', 'http'].includes(f))).toEqual([]);
  });
});
