import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { type Config, type ConfigFlags, httpToken, loadConfig } from '../config/index.ts';
import { ConfigError, StoreError, UsageError } from '../core/index.ts';
import { RunLock, SnapshotStore } from '../store/index.ts';
import { StrategyRuntime, loadStrategies, markPaused } from '../strategy/index.ts';
import { type DaemonFace, faceAt, getFromDaemon, postControl, runningFace } from './daemon-control.ts';
import { loggerFor, withConfigFlags } from './options.ts';

interface SteerFlags extends ConfigFlags {
  url?: string;
}

interface RetryFlags extends SteerFlags {
  strategy?: string;
}

const URL_HELP = "the daemon's HTTP face, such as http://127.0.0.1:9464 (default: the one the daemon on --db recorded; token: http.token, or INDEXBOT_HTTP_TOKEN)";
const noDatabase = (db: string) => new StoreError(`no database at ${db}: pass the --db (or --config) the daemon runs with`, 'STORE_UNAVAILABLE');
const route = (name: string, action: string) => `/api/v1/strategies/${encodeURIComponent(name)}/${action}`;

/**
 * Runs `work` on the database with its lock held, as only a process running on it may write
 * (no daemon runs there: one started since the caller looked is told of by `remedy`).
 */
async function holdingDatabase<T>(db: string, remedy: string, work: (store: SnapshotStore) => T | Promise<T>): Promise<T> {
  const lock = RunLock.acquire(db, remedy);
  const store = SnapshotStore.open(db);
  try {
    return await work(store);
  } finally {
    store.close();
    lock.release();
  }
}

/** The running daemon's strategies with events parked. */
async function parkedStrategies(face: DaemonFace): Promise<string[]> {
  const { strategies } = await getFromDaemon<{ strategies: { strategy: string; parked: unknown[] }[] }>(face, '/api/v1/strategies');
  return strategies.filter((s) => s.parked.length > 0).map((s) => s.strategy);
}

/** The running daemon a command steers: the one at --url, or the one running on the database; undefined when none runs there. */
function daemonToSteer(flags: SteerFlags, config: Config, rerun: string): DaemonFace | undefined {
  if (flags.url !== undefined) return faceAt(flags.url, httpToken(flags, process.env));
  // Nothing to steer where there is no database, and none is made there (a mistyped --db would be left behind).
  if (!existsSync(config.db)) throw noDatabase(config.db);
  return runningFace(config.db, () => httpToken(flags, process.env), rerun);
}

/**
 * Pauses or resumes a strategy: through the running daemon's HTTP face, at once; with none
 * running, in the database, which the daemon reads at its start.
 */
async function steerPause(name: string, paused: boolean, flags: SteerFlags): Promise<void> {
  const verb = paused ? 'pause' : 'resume';
  const config = loadConfig(flags, process.env, { server: false, services: false });
  const face = daemonToSteer(flags, config, `indexbot strategies ${verb} ${name} --db ${config.db}`);
  if (face) {
    const r = await postControl<{ changed: boolean }>(face, route(name, verb));
    process.stdout.write(`${name} ${r.changed ? (paused ? 'paused' : 'resumed') : paused ? 'was paused already' : 'was not paused'} (${face.who})\n`);
    return;
  }
  const strategies = await loadStrategies(config.strategies.dir, { ...config.strategies, logger: loggerFor(config) });
  const names = strategies.map((s) => s.strategy.name);
  if (!names.includes(name)) {
    throw new UsageError(`no strategy named "${name}" in ${config.strategies.dir} (there: ${names.join(', ') || 'none'}); pass the --strategies (or --config) the daemon runs with`);
  }
  const changed = await holdingDatabase(config.db, `run this again to ${verb} it through that process`, (store) => markPaused(store, name, paused));
  const was = paused ? 'was paused already' : 'was not paused';
  process.stdout.write(
    `${name} ${changed ? (paused ? 'paused' : 'resumed') : was} in ${config.db}: no process runs on it; the daemon ${paused ? 'starts it paused' : 'delivers its waiting events'} when it starts\n`,
  );
}

export function registerStrategiesCommand(program: Command): void {
  const cmd = program.command('strategies').description('inspect, pause and resume strategies, and retry their parked events');
  withConfigFlags(cmd.command('parked').description('list the events parked for each strategy'), 'config', 'db').action((flags: ConfigFlags) => {
    const { db } = loadConfig(flags, process.env, { server: false, services: false });
    if (!existsSync(db)) throw noDatabase(db);
    const store = SnapshotStore.open(db, { readonly: true });
    try {
      const parked = store.strategies.parked();
      if (parked.length === 0) process.stdout.write('no parked events\n');
      for (const p of parked) process.stdout.write(`${p.strategy}  seq ${p.seq}  ${p.eventId}  after ${p.attempts} attempts: ${p.error}\n`);
    } finally {
      store.close();
    }
  });
  withConfigFlags(
    cmd
      .command('retry')
      .description("deliver parked events again (through the running daemon's HTTP face, or in the database when none runs)")
      // The name as the dashboard's and Telegram's retry take it, or as --strategy.
      .argument('[name]', 'only this strategy')
      .option('--strategy <name>', 'only this strategy')
      .option('--url <url>', URL_HELP),
    'config',
    'db',
    'strategies',
  ).action(async (name: string | undefined, flags: RetryFlags) => {
    if (name !== undefined && flags.strategy !== undefined && name !== flags.strategy) {
      throw new UsageError(`strategies retry: the name "${name}" and --strategy "${flags.strategy}" differ; give one`);
    }
    flags.strategy ??= name;
    const config = loadConfig(flags, process.env, { server: false, services: false });
    const logger = loggerFor(config);
    const face = daemonToSteer(flags, config, `indexbot strategies retry${flags.strategy === undefined ? '' : ` ${flags.strategy}`} --db ${config.db}`);
    if (face) {
      // The running process delivers them: it holds the database, and its strategies are loaded.
      const names = flags.strategy !== undefined ? [flags.strategy] : await parkedStrategies(face);
      let delivered = 0;
      let stillParked = 0;
      for (const name of names) {
        const r = await postControl<{ delivered: number; stillParked: number }>(face, route(name, 'retry'));
        delivered += r.delivered;
        stillParked += r.stillParked;
      }
      process.stdout.write(`${delivered} of ${delivered + stillParked} parked events delivered; ${stillParked} still parked (${face.who})\n`);
      if (stillParked > 0) process.exitCode = 1;
      return;
    }
    const strategies = await loadStrategies(config.strategies.dir, { ...config.strategies, logger });
    // A daemon started since the look above: the running process is the way now.
    await holdingDatabase(config.db, 'run this again to retry through that process', async (store) => {
      const parked = store.strategies.parked(flags.strategy);
      const loaded = new Set(strategies.map((s) => s.strategy.name));
      const absent = [...new Set(parked.map((p) => p.strategy))].filter((name) => !loaded.has(name));
      // A name given that nothing loaded nor parked: a mistyped argument, as pause and resume say it (exit 64).
      if (absent.length === 0 && flags.strategy !== undefined && !loaded.has(flags.strategy)) {
        throw new UsageError(`no strategy named "${flags.strategy}" in ${config.strategies.dir} (there: ${[...loaded].join(', ') || 'none'}), and none has parked events`);
      }
      if (absent.length > 0) {
        const names = absent;
        throw new ConfigError(
          `strateg${names.length > 1 ? 'ies' : 'y'} ${names.map((n) => `"${n}"`).join(', ')} not loaded from ${config.strategies.dir} (${parked.length} parked event(s)); point --strategies at ${names.length > 1 ? 'them' : 'it'}, enable ${names.length > 1 ? 'them' : 'it'}, or retry others with --strategy`,
        );
      }
      const before = parked.length;
      const runtime = new StrategyRuntime({ store, strategies, logger, paper: config.strategies.paper, timeoutMs: config.strategies.timeoutMs, maxAttempts: config.strategies.maxAttempts });
      const ok = await runtime.retryParked(flags.strategy);
      process.stdout.write(`${ok} of ${before} parked events delivered; ${before - ok} still parked\n`);
      // The handler failed again: a script that retries can tell.
      if (ok < before) process.exitCode = 1;
    });
  });
  for (const paused of [true, false]) {
    const verb = paused ? 'pause' : 'resume';
    withConfigFlags(
      cmd
        .command(verb)
        .description(
          paused ? 'pause a strategy: its events wait for resume (through the running daemon, or in the database when none runs)' : 'resume a paused strategy: each waiting event is delivered once',
        )
        .argument('<name>', 'the strategy')
        .option('--url <url>', URL_HELP),
      'config',
      'db',
      'strategies',
    ).action((name: string, flags: SteerFlags) => steerPause(name, paused, flags));
  }
}
