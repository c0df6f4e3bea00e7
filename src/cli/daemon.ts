import { existsSync } from 'node:fs';
import { shellWord } from './options.ts';
import { AlertDispatcher, HttpSender, describeEvent, testAlert, unmatchableFilterNames } from '../alerts/index.ts';
import { IndexClient, type RequestObserver, SNAPSHOT_PATH, type SharedBudgetSource, endpointTemplate } from '../api/index.ts';
import { type TokenStore, WalletKeypair } from '../auth/index.ts';
import type { Config } from '../config/index.ts';
import { tierLimits } from '../contract/index.ts';
import { type Clock, ConfigError, IndexbotError, type Logger, UsageError, demoted } from '../core/index.ts';
import type { IndexbotEvent } from '../detect/index.ts';
import { type BotControl, RemoteFaces } from '../http/index.ts';
import { type BudgetPlan, type PollJob, Poller, planBudget } from '../poller/index.ts';
import type { RateGateSeed, RateGateState, RedisBudgets } from '../ratelimit/index.ts';
import { openSharedBudgets } from './redis.ts';
import { RetentionJob, RunLock, SnapshotStore, claimFromDemo, failureFields, markDemoDatabase, removeDatabaseFiles, removeDemoDatabase } from '../store/index.ts';
import { type Fill, type LoadedStrategy, StrategyRuntime, instrumentLabel, loadStrategies, watchStrategies } from '../strategy/index.ts';
import { collectStatus, strategyStatus } from './status-command.ts';
import { orphanedConsumers } from './forget-command.ts';

export interface DaemonOptions {
  logger: Logger;
  /**
   * Aborted when a stop is asked while it starts: the start's own API calls end then, rather
   * than after their timeouts and retries (trial 32: 39 s against a server that did not answer,
   * past a service manager's stop timeout).
   */
  stopSignal?: AbortSignal;
  /** Called with each batch of new events after it is committed. */
  onEvents?: (events: IndexbotEvent[]) => void;
  onAlert?: (strategy: string, message: string, data: unknown) => void;
  /** `label`: the instrument as people read it (a token's symbol). */
  onFill?: (strategy: string, fill: Fill, label: string) => void;
  /** After each poll, with how late it started (bench/http.ts). */
  onPoll?: (p: { job: string; ok: boolean; lateMs: number; durationMs: number }) => void;
  /**
   * The clock strategies see, and cut their queries at. @default the system clock; the demo
   * passes the sandbox's simulated clock, whose market runs ahead of real time.
   */
  strategyClock?: Clock;
  /** A collector (`--role collector`) polls and detects; its runners run the strategies. */
  withoutStrategies?: boolean;
  /** Reload a strategy whose file changes, without a restart (`--watch`). */
  watch?: boolean;
  onReload?: (strategy: string, refused?: string) => void;
  /**
   * The demo's database: deleted once the lock is ours (so never under a running bot), if a
   * demo made it or `evenUnmarked`, and marked as the demo's again.
   */
  demoDatabase?: { evenUnmarked: boolean };
}

/** A running bot: its store, client and poller, and how to stop them in order. */
export interface Daemon {
  store: SnapshotStore;
  client: IndexClient;
  plan: BudgetPlan;
  indexes: string[];
  strategies: string[];
  /** Where the HTTP face listens, when it is on. */
  httpUrl: string | undefined;
  /** Settles with why the bot cannot go on by itself (the server refuses its credential): its caller stops it and exits with that error. */
  failed: Promise<IndexbotError>;
  stop(): Promise<void>;
}

const STATUS_EVERY_MS = 5_000;

/**
 * Wires the live pipeline: lock, store, client, budget plan, poller. Everything it opens it
 * closes again if a later step fails, so a bad start leaves no lock behind.
 */
export async function startDaemon(config: Config, options: DaemonOptions): Promise<Daemon> {
  const { logger } = options;
  // Strategies load first: a broken one stops the start before anything is opened.
  const strategies = options.withoutStrategies ? [] : await loadConfiguredStrategies(config, logger);
  const lock = RunLock.acquire(config.db);
  let store: SnapshotStore | undefined;
  let shared: RedisBudgets | undefined;
  let made = false;
  // What is running, to stop (in reverse) before the store closes if a later step fails.
  const started: (() => unknown)[] = [];
  try {
    // A collector (no strategies) publishes its events to the stream. The port is taken before
    // anything is changed: a port in use stops the start with the demo's database as it was (trial 30).
    const faces = new RemoteFaces(config, logger, { streamWriter: options.withoutStrategies });
    started.push(() => faces.stop());
    await faces.listen();
    if (options.demoDatabase) removeDemoDatabase(config.db, options.demoDatabase.evenUnmarked);
    made = !existsSync(config.db);
    store = SnapshotStore.open(config.db);
    config = withStoredSignIn(config, store);
    if (options.demoDatabase) markDemoDatabase(store, Date.now());
    else claimFromDemo(store);
    shared = await openSharedBudgets(config, logger);
    const client = createClient(config, store, logger, faces.clientObserver, shared);
    // A stop asked while the server keeps this waiting ends the wait; one asked before it stops the bot once started, as any other.
    const indexes = await resolveIndexes(client, config.indexes, 'config', options.stopSignal?.aborted ? undefined : options.stopSignal);
    // A collector runs no strategy: the strategies' names are its runners' to check.
    for (const w of unmatchableFilterNames(config.alerts.sinks, options.withoutStrategies ? undefined : strategies.map((s) => s.strategy.name), indexes)) logger.warn({ component: 'alerts' }, w);
    const jobs: PollJob[] = [
      { name: 'indexes', kind: 'indexes', indexId: undefined, intervalMs: config.intervalsMs.indexes },
      { name: 'tokens', kind: 'tokens', indexId: undefined, intervalMs: config.intervalsMs.tokens },
      ...indexes.flatMap((id) => (['rebalancing', 'composition', 'performance'] as const).map((kind) => ({ name: `${kind}:${id}`, kind, indexId: id, intervalMs: config.intervalsMs[kind] }))),
    ];
    const { limit } = tierLimits(config.tier, config.enterpriseLimits);
    const plan = planBudget(jobs, (limit * 60_000) / config.windowMs);
    logPlan(logger, plan, config);
    faces.expect({ endpoints: [...new Set(plan.jobs.map((j) => endpointTemplate({ method: 'GET', path: SNAPSHOT_PATH[j.kind] })))] });
    const openStore = store;
    openStore.setRuntime('budget', plan, Date.now());
    const { alerts, runtime } = startStrategiesAndAlerts(openStore, strategies, config, options, faces);
    started.push(() => runtime.stop());
    started.push(() => alerts.stop());
    let fail!: (e: IndexbotError) => void;
    const failed = new Promise<IndexbotError>((resolve) => (fail = resolve));
    const poller = new Poller({
      client,
      store: openStore,
      // Trial 25: a key revoked while the bot ran was retried for ever, every job logging a 401, and systemd never learnt a human must act.
      onCredentialRefused: ({ since, refusals, error }) =>
        fail(
          new IndexbotError(
            `the server has refused the credential on every poll since ${new Date(since).toISOString()} (${refusals} polls, the last: ${error.message}): revoked or expired? set a valid INDEXBOT_API_KEY (or run indexbot login again) and restart`,
            'API_UNAUTHORIZED',
            'operational',
          ),
        ),
      jobs: plan.jobs,
      driftThreshold: config.driftThreshold,
      logger: logger.child({ component: 'poller' }),
      onEvents: (events) => {
        for (const e of events) logger.info({ event: { id: e.id, seq: e.seq, type: e.type, indexId: e.indexId } }, describeEvent(e));
        runtime.notify();
        alerts.notify();
        faces.onEvents(events);
        options.onEvents?.(events);
      },
      onPoll: (p) => {
        faces.onPoll(p);
        options.onPoll?.(p);
      },
    });
    const retention = config.retentionDays > 0 ? new RetentionJob({ store: openStore, days: config.retentionDays, logger: logger.child({ component: 'retention' }) }) : undefined;
    const report = () => {
      try {
        openStore.setRuntime('gates', { gates: client.rateGates(), schedule: poller.schedule(), pid: process.pid }, Date.now());
      } catch (e) {
        logger.warn({ error: failureFields(e) }, 'could not record the status for `indexbot status`; next try in 5 s');
      }
    };
    const statusTimer = setInterval(report, STATUS_EVERY_MS);
    started.push(() => clearInterval(statusTimer));
    await faces.start(botControl(openStore, runtime, config, options, { indexes, gates: () => client.rateGates() }));
    // A caller told of each reload (the demo) says it in its own words: the watcher's lines only at debug, not a JSON line beside it.
    const watchLogger = logger.child({ component: 'watch' });
    const watcher = options.watch
      ? watchStrategies({
          dir: config.strategies.dir,
          loaded: strategies,
          params: config.strategies.params,
          runtime,
          logger: options.onReload ? demoted(watchLogger) : watchLogger,
          onReload: options.onReload,
        })
      : undefined;
    started.push(() => watcher?.close());
    poller.start();
    started.push(() => poller.stop(config.shutdownGraceMs));
    retention?.start();
    logger.info({ indexes, strategies: runtime.names, alertSinks: config.alerts.sinks.map((s) => s.name), db: config.db, baseUrl: config.baseUrl, tier: config.tier }, 'indexbot running');
    return {
      store: openStore,
      client,
      plan,
      indexes,
      strategies: runtime.names,
      httpUrl: faces.url,
      failed,
      async stop() {
        await inTurn([
          () => clearInterval(statusTimer),
          () => watcher?.close(),
          () => faces.stop(),
          () => poller.stop(config.shutdownGraceMs),
          () => runtime.stop(),
          () => alerts.stop(),
          () => retention?.stop(),
          report,
          () => shared?.close(),
          () => openStore.close(),
          () => lock.release(),
        ]);
        logger.info({}, 'indexbot stopped');
      },
    };
  } catch (e) {
    // A database this start made and then refused (a bad key, an unknown index) is not left behind empty; one a backfill beside it has written to stays.
    const leftEmpty = made && store?.holdsNoData() === true;
    await inTurn([...started.reverse(), () => shared?.close(), () => store?.close(), () => leftEmpty && removeDatabaseFiles(config.db), () => lock.release()]).catch(() => undefined);
    throw e;
  }
}

/** Runs every step, in order, even past one that throws (so the lock is always released), then throws the first failure. */
async function inTurn(steps: (() => unknown)[]): Promise<void> {
  const failures: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (e) {
      failures.push(e);
    }
  }
  if (failures.length > 0) throw failures[0];
}

/** The strategies the config names, with its params, from its directory. */
export function loadConfiguredStrategies(config: Config, logger: Logger): Promise<LoadedStrategy[]> {
  const { dir, params, disabled, onError, onUnknownName, explicit } = config.strategies;
  return loadStrategies(dir, { params, disabled, onError, onUnknownName, explicit, logger });
}

/**
 * The config as the credential the client will use makes it: with no key nor keypair given
 * but the token pair `indexbot login` kept in the database, the client signs in with those,
 * and a tier not set follows them (a wallet's, standard), as it follows a keypair given (trial
 * 26: public, less than half the budget, while every request went out as the wallet's).
 */
export function withStoredSignIn(config: Config, tokens: TokenStore): Config {
  if (config.apiKey || config.walletKeypairPath || tokens.load(config.baseUrl) === undefined) return config;
  return { ...config, storedSignIn: true, tier: config.tierExplicit ? config.tier : 'standard' };
}

/** The client a command talks to the server with; its tokens are kept in the store. */
export function createClient(config: Config, store: SnapshotStore, logger: Logger, observer?: RequestObserver, sharedBudgets?: SharedBudgetSource): IndexClient {
  return new IndexClient({
    baseUrl: config.baseUrl,
    apiKey: config.apiKey,
    keypair: config.walletKeypairPath ? WalletKeypair.fromFile(config.walletKeypairPath) : undefined,
    tokenStore: store,
    tier: config.tier,
    enterpriseLimits: config.enterpriseLimits,
    windowMs: config.windowMs,
    logger: logger.child({ component: 'api' }),
    gateSeeds: persistedGateSeeds(store),
    observer,
    sharedBudgets,
  });
}

/** The rate gates as the last process on this database reported them, to start from. */
function persistedGateSeeds(store: SnapshotStore): Map<string, RateGateSeed> {
  const reported = store.runtime<{ gates?: RateGateState[] }>('gates');
  return new Map((reported?.value.gates ?? []).map((g) => [g.name, { ...g, at: reported!.updatedAt }]));
}

/**
 * The strategies and the alert sinks of a role that runs strategies, both reporting to the
 * remote faces (fills to the SSE stream and metrics, deliveries to metrics); alerts started.
 * `alertEvents` false: the sinks get only the strategies' alerts (a runner; its collector alerts the events).
 */
export function startStrategiesAndAlerts(store: SnapshotStore, strategies: LoadedStrategy[], config: Config, options: DaemonOptions, faces: RemoteFaces, alertEvents = true) {
  const alerts = new AlertDispatcher({
    store,
    alertEvents,
    sinks: config.alerts.sinks,
    giveUpAfterMs: config.alerts.giveUpAfterMs,
    logger: options.logger.child({ component: 'alerts' }),
    onAttempt: (sink, outcome) => faces.onAlertAttempt(sink, outcome),
  });
  const onFill: DaemonOptions['onFill'] = (strategy, fill, label) => {
    faces.onFill(strategy, fill, label);
    options.onFill?.(strategy, fill, label);
  };
  const runtime = startStrategies(store, strategies, config, { ...options, onFill }, () => alerts.notify());
  // Why a strategy does not trade, in the start's lines (trial 35: paused, and nothing said so).
  const paused = runtime.paused();
  if (paused.length > 0) options.logger.warn({ strategies: paused }, `paused since before this start: ${paused.join(', ')}; their events wait until \`indexbot strategies resume\``);
  const sinks = config.alerts.sinks.map((s) => s.name);
  faces.expect({ strategies: runtime.names, sinks });
  const orphans = orphanedConsumers(
    store.cursors().map((c) => c.consumer),
    runtime.names,
    sinks,
  );
  if (orphans.length > 0) {
    options.logger.warn(
      { consumers: orphans },
      `cursors of strategies or alert sinks this run does not have: ${orphans.join(', ')}; retention keeps every performance event they have not read. If they are gone for good: stop the bot, then \`indexbot forget ${orphans.join(' ')} --db ${shellWord(config.db)}\``,
    );
  }
  alerts.start();
  return { alerts, runtime };
}

/**
 * What the HTTP face and Telegram commands read and steer. `indexes`: the ones polled; a runner
 * passes a getter over those its store has heard of. `gates`: none for a runner (no client).
 */
export function botControl(store: SnapshotStore, runtime: StrategyRuntime, config: Config, options: DaemonOptions, parts: Pick<BotControl, 'indexes' | 'gates'>): BotControl {
  const clock = options.strategyClock;
  return {
    store,
    get indexes() {
      return parts.indexes;
    },
    status: () => collectStatus(store, Date.now()),
    strategyBooks: () => strategyStatus(store),
    gates: parts.gates,
    marketNow: () => clock?.now() ?? Date.now(),
    strategies: runtime,
    sendTestAlert: () => sendTestAlert(config),
  };
}

async function sendTestAlert(config: Config): Promise<{ sink: string; ok: boolean; reason?: string }[]> {
  // A console sink's test message goes where its alerts go (stdout): the test is that it shows.
  const sender = new HttpSender();
  const alert = testAlert('http', Date.now());
  return Promise.all(config.alerts.sinks.map(async (sink) => ({ sink: sink.name, ...(await sender.send(sink, alert)) })));
}

/** `alerted` is called once a strategy's alert is committed, for the sinks to pick it up. */
function startStrategies(store: SnapshotStore, strategies: LoadedStrategy[], config: Config, options: DaemonOptions, alerted: () => void): StrategyRuntime {
  const { logger } = options;
  const runtime = new StrategyRuntime({
    store,
    strategies,
    clock: options.strategyClock,
    // Events are stamped by the poller's (system) clock: that is what "replayed" compares with.
    startedAt: Date.now(),
    logger: logger.child({ component: 'strategy' }),
    paper: config.strategies.paper,
    timeoutMs: config.strategies.timeoutMs,
    maxAttempts: config.strategies.maxAttempts,
    // A strategy added to a bot that has run for months acts on what happens from now on, not on its history.
    newStrategiesFrom: 'end',
    onAlert: (strategy, message, data) => {
      logger.info({ strategy, alert: data }, message);
      options.onAlert?.(strategy, message, data);
      alerted();
    },
    onFill: (strategy, fill) => {
      const label = instrumentLabel(store, fill.instrument);
      logger.info({ strategy, fill }, `${strategy}: paper ${fill.side} ${fill.quantity.toPrecision(6)} ${label} at ${fill.price.toPrecision(6)}`);
      options.onFill?.(strategy, fill, label);
    },
  });
  runtime.start();
  return runtime;
}

/** The configured indexes (or those `--indexes` names: a bad one is then a usage error, exit 64), checked against the server's list. */
export async function resolveIndexes(client: IndexClient, wanted: 'all' | string[], from: 'config' | '--indexes' = 'config', signal?: AbortSignal): Promise<string[]> {
  const listed = (await client.iterateIndexes({ signal }).toArray()).map((i) => i.id);
  if (wanted === 'all') return listed;
  const unknown = wanted.filter((id) => !listed.includes(id));
  if (unknown.length > 0) {
    const message = `unknown index${unknown.length > 1 ? 'es' : ''} ${unknown.map((u) => `"${u}"`).join(', ')}; the server lists ${listed.join(', ')}`;
    throw from === 'config' ? new ConfigError(message) : new UsageError(`--indexes: ${message}`);
  }
  return wanted;
}

function logPlan(logger: Logger, plan: BudgetPlan, config: Config): void {
  const summary = { requestedPerMin: round(plan.requestedPerMin), plannedPerMin: round(plan.plannedPerMin), budgetPerMin: round(plan.budgetPerMin), tier: config.tier };
  if (plan.stretched.length === 0) {
    logger.info(summary, 'polling plan fits the rate budget');
    return;
  }
  logger.warn(
    { ...summary, stretched: plan.stretched.map((s) => `${s.name} ${s.fromMs / 1000}s -> ${s.toMs / 1000}s`) },
    plan.fits ? 'configured polling exceeds the rate budget; stretched the least urgent jobs' : 'polling cannot fit the rate budget even stretched; expect delays',
  );
}

const round = (x: number) => Math.round(x * 10) / 10;
