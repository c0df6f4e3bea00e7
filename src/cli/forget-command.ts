import type { Command } from 'commander';
import { alertConsumer, strategyAlertConsumer } from '../alerts/index.ts';
import { type Config, type ConfigFlags, loadConfig } from '../config/index.ts';
import { UsageError, silentLogger } from '../core/index.ts';
import { RunLock, SnapshotStore } from '../store/index.ts';
import { consumerOf, loadStrategies } from '../strategy/index.ts';
import { withConfigFlags } from './options.ts';

/** What a consumer, named as `status` lists it, stands for: its cursors, and the sink whose queue goes with them. */
export function consumerParts(consumer: string): { cursors: string[]; sink?: string } | undefined {
  if (/^strategy:./.test(consumer)) return { cursors: [consumer] };
  const sink = /^alert:(.+?)(?::strategy-alerts)?$/.exec(consumer)?.[1];
  return sink === undefined ? undefined : { cursors: [alertConsumer(sink), strategyAlertConsumer(sink)], sink };
}

/**
 * The consumers with a cursor in the database that this run has no strategy or sink for, named
 * as `status` lists them. A cursor pins what retention keeps: one left by a strategy or sink
 * taken out of the config kept every later performance event for good (trial 32).
 */
export function orphanedConsumers(cursors: readonly string[], strategies: readonly string[], sinks: readonly string[]): string[] {
  const known = new Set([...strategies.map(consumerOf), ...sinks.flatMap((s) => [alertConsumer(s), strategyAlertConsumer(s)])]);
  const orphans = cursors.filter((c) => consumerParts(c) !== undefined && !known.has(c));
  // A sink's two cursors are one name to forget.
  return [...new Set(orphans.map((c) => (c.startsWith('alert:') ? alertConsumer(consumerParts(c)!.sink!) : c)))];
}

/**
 * The cursors of the strategies and sinks the config runs: every sink it names (no secret is
 * read), and each strategy module that loads here (one that does not is left out of the check,
 * the others kept).
 */
async function stillRun(config: Config): Promise<Set<string>> {
  const running = new Set(config.alerts.sinkNames.flatMap((s) => [alertConsumer(s), strategyAlertConsumer(s)]));
  const { dir, explicit } = config.strategies;
  for (const s of await loadStrategies(dir, { onError: 'skip', explicit, logger: silentLogger })) running.add(consumerOf(s.strategy.name));
  return running;
}

export function registerForgetCommand(program: Command): void {
  withConfigFlags(
    program
      .command('forget')
      .description("drop the cursors of strategies or alert sinks the bot no longer runs (named as `status` lists them), so retention prunes what they never read; a sink's queue goes with it")
      .argument('<consumers...>', 'e.g. strategy:old-strategy alert:old-webhook'),
    'config',
    'db',
  ).action(async (consumers: string[], flags: ConfigFlags) => {
    const parts = consumers.map((c) => {
      const p = consumerParts(c);
      if (!p) throw new UsageError(`forget: "${c}" is no strategy or alert sink consumer; name one as status lists it, such as strategy:NAME or alert:SINK`);
      return p;
    });
    const config = loadConfig(flags, process.env, { server: false, services: false });
    // What the config still runs would start again as new at the next run, its unread events skipped and a sink's queue lost (trial 35: dropped without a word).
    const running = await stillRun(config);
    const kept = consumers.filter((_, i) => parts[i]!.cursors.some((c) => running.has(c)));
    if (kept.length > 0) {
      throw new UsageError(
        `forget: the config still runs ${kept.join(', ')}: a run would start ${kept.length > 1 ? 'them' : 'it'} again as new, skipping what ${kept.length > 1 ? 'they' : 'it'} had not read; take ${kept.length > 1 ? 'them' : 'it'} out of the config first`,
      );
    }
    // Read first, without the lock: a mistyped --db is then "no database", not a new one made to forget nothing in.
    const store = SnapshotStore.open(config.db, { readonly: true });
    const held = new Set(store.cursors().map((c) => c.consumer));
    store.close();
    const unknown = consumers.filter((_, i) => !parts[i]!.cursors.some((c) => held.has(c)));
    if (unknown.length > 0) throw new UsageError(`forget: ${config.db} has no cursor for ${unknown.join(', ')} (it has: ${[...held].join(', ') || 'none'})`);
    // Only the process running on the database writes to it: the bot is stopped first (it would also make a cursor for what it still runs).
    const lock = RunLock.acquire(config.db, 'stop it first: a running bot keeps the cursors of what it runs');
    try {
      const writable = SnapshotStore.open(config.db);
      try {
        const dropped = writable.transaction(() => parts.map((p) => ({ cursors: writable.dropCursors(p.cursors), owed: p.sink === undefined ? 0 : writable.outbox.forgetSink(p.sink) })));
        for (const [i, c] of consumers.entries()) {
          const d = dropped[i]!;
          process.stdout.write(`forgot ${c}${d.owed > 0 ? `, and ${d.owed} alerts it still owed` : ''}\n`);
        }
      } finally {
        writable.close();
      }
    } finally {
      lock.release();
    }
  });
}
