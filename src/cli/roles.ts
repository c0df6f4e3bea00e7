import { existsSync } from 'node:fs';
import { unmatchableFilterNames } from '../alerts/index.ts';
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { RemoteFaces } from '../http/index.ts';
import { type Config, resolveRedisUrl } from '../config/index.ts';
import { ConfigError, type IndexbotError, UsageError } from '../core/index.ts';
import { RetentionJob, RunLock, SnapshotStore, claimFromDemo, removeDatabaseFiles } from '../store/index.ts';
import { redactRedisUrl, refusedSettings } from '../redis/index.ts';
import { StreamConsumer, StreamPublisher } from '../stream/index.ts';
import { type DaemonOptions, botControl, loadConfiguredStrategies, startDaemon, startStrategiesAndAlerts } from './daemon.ts';
import { consumerOf } from '../strategy/index.ts';

export const ROLES = ['all', 'collector', 'strategies'] as const;
export type Role = (typeof ROLES)[number];

export interface RoleFlags {
  role?: string;
  /** Redis of the event stream; INDEXBOT_EVENTS_URL otherwise (kept out of `ps` when it holds a password). */
  events?: string;
  /** A runner's consumer group; stable across its restarts. */
  group?: string;
}

/** What `stop()`s a running role, whichever it is, and tells when it cannot go on (a runner polls nothing: never). */
export interface RunningRole {
  failed?: Promise<IndexbotError>;
  stop(): Promise<void>;
}

/** `--role` as run and doctor take it. */
export function parseRole(raw: string): Role {
  if (!(ROLES as readonly string[]).includes(raw)) throw new UsageError(`--role: expected one of ${ROLES.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw as Role;
}

/**
 * `indexbot run --role …`: `all` is the single-process daemon; `collector` is that daemon
 * without strategies, publishing every committed event to the Redis Stream; `strategies` is a
 * runner: no client, no poller, its strategies fed from the stream into its own store.
 */
export async function startRole(config: Config, flags: RoleFlags, options: DaemonOptions, env: NodeJS.ProcessEnv = process.env): Promise<RunningRole> {
  const role = parseRole(flags.role ?? 'all');
  if (role === 'all') {
    // The environment may name the stream for every role of a deployment; the flag is asked for this one.
    if (flags.events !== undefined)
      throw new UsageError('--events: only a collector or a strategies runner uses the event stream; add --role collector or --role strategies (the default, --role all, is one process)');
    return startDaemon(config, options);
  }
  const eventsSource = flags.events === undefined ? 'INDEXBOT_EVENTS_URL' : '--events';
  const eventsUrl = resolveRedisUrl(flags.events ?? env.INDEXBOT_EVENTS_URL, eventsSource, env, 'the event stream', flags.events !== undefined);
  if (!eventsUrl) throw new ConfigError(`--role ${role} needs the event stream's Redis: --events redis://host:6379 or INDEXBOT_EVENTS_URL`);
  // Before anything is opened: the stream's loops would retry a refused password for ever.
  const refusal = await refusedSettings(eventsUrl);
  if (refusal !== undefined) throw new ConfigError(`${eventsSource} ${redactRedisUrl(eventsUrl)}: the event stream's Redis refused the ${refusal.what} (${refusal.message})`);
  const { logger } = options;
  if (role === 'collector') {
    let publisher: StreamPublisher | undefined;
    const daemon = await startDaemon(config, {
      ...options,
      withoutStrategies: true,
      onEvents: (e) => {
        options.onEvents?.(e);
        publisher?.notify();
      },
    });
    publisher = new StreamPublisher({ store: daemon.store, redisUrl: eventsUrl, logger: logger.child({ component: 'stream' }) });
    try {
      await publisher.checkStream();
    } catch (e) {
      await publisher.stop();
      await daemon.stop();
      throw e;
    }
    publisher.start();
    logger.info({ role }, 'collector: publishing every event to the event stream');
    return {
      failed: daemon.failed,
      async stop() {
        await publisher!.stop();
        await daemon.stop();
      },
    };
  }
  return startRunner(config, eventsUrl, flags.group ?? defaultGroup(config), options);
}

/** A runner's group unless named: this host and database, so a restart finds its place again. */
function defaultGroup(config: Config): string {
  return `runner:${hostname()}:${createHash('sha256').update(resolve(config.db)).digest('hex').slice(0, 8)}`;
}

async function startRunner(config: Config, eventsUrl: string, group: string, options: DaemonOptions): Promise<RunningRole> {
  const { logger } = options;
  const strategies = await loadConfiguredStrategies(config, logger);
  const lock = RunLock.acquire(config.db);
  let store: SnapshotStore | undefined;
  const faces = new RemoteFaces(config, logger, { streamReader: true });
  const made = !existsSync(config.db);
  try {
    store = SnapshotStore.open(config.db);
    claimFromDemo(store);
    const openStore = store;
    // The port is taken before the stream is read: one in use stops the start.
    await faces.listen();
    // A runner polls nothing: the indexes are its collector's to check.
    for (const w of unmatchableFilterNames(
      config.alerts.sinks,
      strategies.map((s) => s.strategy.name),
      undefined,
    ))
      logger.warn({ component: 'alerts' }, w);
    // Strategies that have never run on this database: they skip what the stream holds from before this start.
    const held = new Set(openStore.cursors().map((c) => c.consumer));
    const newConsumers = strategies.map((s) => consumerOf(s.strategy.name)).filter((c) => !held.has(c));
    // Set before the first read: the consumer calls onEvents only once started.
    let running: ReturnType<typeof startStrategiesAndAlerts> | undefined;
    const consumer = new StreamConsumer({
      store: openStore,
      redisUrl: eventsUrl,
      group,
      reader: { databaseId: openStore.databaseId(), where: `${hostname()}:${resolve(config.db)}` },
      logger: logger.child({ component: 'stream' }),
      newConsumers,
      onEvents: async (events) => {
        const { runtime, alerts } = running!;
        runtime.notify();
        alerts.notify();
        faces.onEvents(events);
        options.onEvents?.(events);
        // The strategies see the data stored with an event, and none stored after it.
        await runtime.passed(events.at(-1)!.seq);
      },
    });
    // Two runners in one group would each get part of the events (trial 29): the second is refused. Redis away: the loop claims it later.
    const other = await consumer.claimGroup().catch(() => undefined);
    if (other !== undefined) {
      await consumer.stop();
      throw new ConfigError(
        `--group ${group}: another runner reads through it (${other}), and each would get part of the events; give each runner its own --group (the default is one per host and database)`,
      );
    }
    running = startStrategiesAndAlerts(openStore, strategies, config, options, faces, false);
    const { alerts, runtime } = running;
    // No client: no rate gates; the indexes are those the stream has brought so far.
    await faces.start(
      botControl(openStore, runtime, config, options, {
        gates: () => [],
        get indexes() {
          return openStore.indexCacheSummaries().map((i) => i.indexId);
        },
      }),
    );
    consumer.start();
    const retention = config.retentionDays > 0 ? new RetentionJob({ store: openStore, days: config.retentionDays, logger: logger.child({ component: 'retention' }) }) : undefined;
    retention?.start();
    logger.info({ role: 'strategies', group, strategies: runtime.names, db: config.db }, 'indexbot running: strategies fed from the event stream');
    return {
      async stop() {
        await faces.stop();
        await consumer.stop();
        await runtime.stop();
        await alerts.stop();
        await retention?.stop();
        openStore.close();
        lock.release();
        logger.info({}, 'indexbot stopped');
      },
    };
  } catch (e) {
    await faces.stop().catch(() => undefined);
    // A database this start made and then refused (its group held by another runner, trial 33) is not left behind empty.
    const leftEmpty = made && store?.holdsNoData() === true;
    store?.close();
    if (leftEmpty) removeDatabaseFiles(config.db);
    lock.release();
    throw e;
  }
}
