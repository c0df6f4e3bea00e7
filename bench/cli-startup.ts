/**
 * CLI start-up: wall time of `indexbot --help` (process start to exit; it loads every command),
 * of `indexbot status` on a missing database (process start to its one-line error and exit 78;
 * it loads the status command alone), and of `indexbot run`
 * from process start to its first poll request (the first `request` log line after
 * `indexbot running`), against an in-process sandbox. Each figure is the median of RUNS
 * fresh processes. INDEXBOT_BIN picks the bin (default: this checkout's bin/indexbot.js,
 * which runs the TypeScript source through tsx; an installed package's bin runs dist/), and
 * INDEXBOT_BENCH_CWD the directory it runs in (its strategies/ are loaded).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSandbox } from '../src/sandbox/index.ts';

const RUNS = Number(process.env.RUNS ?? 5);
const bin = process.env.INDEXBOT_BIN ?? fileURLToPath(new URL('../bin/indexbot.js', import.meta.url));
const cwd = process.env.INDEXBOT_BENCH_CWD ?? fileURLToPath(new URL('..', import.meta.url));

/** Resolves with the time from spawn to `done` returning true for a log line, or to an exit with `exitCode`. */
function timeUntil(args: string[], env: NodeJS.ProcessEnv, done: (line: string, state: { running: boolean }) => boolean, exitCode?: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [bin, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const state = { running: false };
    let rest = '';
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      resolve(performance.now() - started);
      child.kill('SIGTERM');
    };
    // The logger writes to stderr; --help to stdout.
    child.stdout.resume();
    child.stderr.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) if (done(line, state)) finish();
    });
    child.on('exit', (code) => {
      if (exitCode !== undefined && code === exitCode) finish();
      else if (!finished) reject(new Error(`indexbot ${args.join(' ')} exited with ${code}: ${rest.slice(0, 500)}`));
    });
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

const sandbox = await startSandbox({ port: 0 });
const dir = mkdtempSync(join(tmpdir(), 'indexbot-startup-'));
try {
  const help: number[] = [];
  for (let i = 0; i < RUNS; i++) help.push(await timeUntil(['--help'], {}, () => false, 0));
  const status: number[] = [];
  for (let i = 0; i < RUNS; i++) status.push(await timeUntil(['status', '--db', join(dir, 'missing', 'x.db')], {}, () => false, 78));
  const firstPoll: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const env = {
      INDEXBOT_BASE_URL: sandbox.baseUrl,
      INDEXBOT_API_KEY: sandbox.keys.premium,
      INDEXBOT_TIER: 'premium',
      INDEXBOT_DB: join(dir, `run-${i}.db`),
      INDEXBOT_LOG_LEVEL: 'debug',
      INDEXBOT_LOG_FORMAT: 'json',
    };
    firstPoll.push(
      await timeUntil(['run'], env, (line, state) => {
        if (line.includes('"indexbot running"')) state.running = true;
        return state.running && line.includes('"msg":"request"');
      }),
    );
  }
  console.log(`cli-startup: ${bin}`);
  console.log(`  indexbot --help, process start to exit: median ${median(help).toFixed(0)} ms of ${RUNS} (${help.map((x) => x.toFixed(0)).join(', ')})`);
  console.log(`  indexbot status (missing database), process start to exit: median ${median(status).toFixed(0)} ms of ${RUNS} (${status.map((x) => x.toFixed(0)).join(', ')})`);
  console.log(`  indexbot run, process start to first poll request: median ${median(firstPoll).toFixed(0)} ms of ${RUNS} (${firstPoll.map((x) => x.toFixed(0)).join(', ')})`);
} finally {
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
}
