import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { type ConfigFlags, loadConfig } from '../config/index.ts';
import { ConfigError, StoreError, UsageError } from '../core/index.ts';
import { RunLock, SnapshotStore } from '../store/index.ts';
import { StrategyRuntime, loadStrategies } from '../strategy/index.ts';
import { loggerFor, withConfigFlags } from './options.ts';

interface RetryFlags extends ConfigFlags {
  strategy?: string;
}

export function registerStrategiesCommand(program: Command): void {
  const cmd = program.command('strategies').description('inspect strategies and their parked events');
  withConfigFlags(cmd.command('parked').description('list the events parked for each strategy'), 'db').action((flags: { db?: string }) => {
    const store = SnapshotStore.open(flags.db ?? process.env.INDEXBOT_DB ?? 'data/indexbot.db', { readonly: true });
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
      .description('deliver parked events again (stop the daemon first: one process per database)')
      // The name as the dashboard's and Telegram's retry take it, or as --strategy.
      .argument('[name]', 'only this strategy')
      .option('--strategy <name>', 'only this strategy'),
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
    // Nothing to retry where there is no database, and none is made there (a mistyped --db would be left behind).
    if (!existsSync(config.db)) throw new StoreError(`no database at ${config.db}: pass the --db (or --config) the daemon runs with`, 'STORE_UNAVAILABLE');
    const strategies = await loadStrategies(config.strategies.dir, { ...config.strategies, logger });
    // Another --db would retry nothing: the running process is the way, or its stop.
    const lock = RunLock.acquire(config.db, `retry through it (\`indexbot status --db ${config.db}\` prints the request for its --http face), or stop it first`);
    const store = SnapshotStore.open(config.db);
    try {
      const parked = store.strategies.parked(flags.strategy);
      const loaded = new Set(strategies.map((s) => s.strategy.name));
      const absent = [...new Set(parked.map((p) => p.strategy))].filter((name) => !loaded.has(name));
      if (absent.length > 0 || (flags.strategy !== undefined && !loaded.has(flags.strategy))) {
        const names = absent.length > 0 ? absent : [flags.strategy!];
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
    } finally {
      store.close();
      lock.release();
    }
  });
}
