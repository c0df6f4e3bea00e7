import { setMaxListeners } from 'node:events';
import cron, { type ScheduledTask, type TaskOptions } from 'node-cron';
import { type IndexClient, SNAPSHOT_PRIORITY } from '../api/index.ts';
import { type Clock, IndexbotError, type Logger, errorFields, silentLogger, systemClock } from '../core/index.ts';
import type { Rebalance } from '../contract/index.ts';
import type { IndexbotEvent } from '../detect/index.ts';
import { type SnapshotStore, failureFields, storeFailure } from '../store/index.ts';
import type { PollJob } from './budget.ts';
import { ingest } from './ingest.ts';

export interface PollerOptions {
  client: IndexClient;
  store: SnapshotStore;
  jobs: PollJob[];
  /** Drift past this (|weight - target|) is a `composition.drift` event. @default 0.02 */
  driftThreshold?: number;
  /**
   * First backoff step after a failed poll (at least the job's interval); doubles per failure
   * in a row, and resets at the first good answer. High-priority jobs (the rebalancing feed)
   * step from their interval and stop at four intervals instead. @default 5000
   */
  backoffBaseMs?: number;
  /** @default 300000 */
  backoffMaxMs?: number;
  /** @default systemClock */
  clock?: Clock;
  /** @default Math.random */
  random?: () => number;
  /** @default silentLogger */
  logger?: Logger;
  /** Called with the events each poll stored, after its transaction committed. */
  onEvents?: (events: IndexbotEvent[]) => void;
  /**
   * Called after each poll: `lateMs` is how long it started after it could have, i.e. after its
   * due time and the end of its previous run (a run overlapping its next due time is the
   * server's slowness, not a scheduling delay). For metrics and benchmarks.
   */
  onPoll?: (p: { job: string; ok: boolean; lateMs: number; durationMs: number }) => void;
  /**
   * Called once when the server has refused the credential (HTTP 401) on
   * {@link CREDENTIAL_REFUSALS} polls in a row, with none succeeding between, over at least two
   * of the shortest job interval: a key revoked or expired while the bot runs. Retrying never
   * succeeds then; the daemon stops (exit 78) so that a human acts, as at its start.
   */
  onCredentialRefused?: (refused: { since: number; refusals: number; error: Error }) => void;
}

const TICK_MS = 1_000;
/** A high-priority job's backoff stops at this many of its intervals. */
const URGENT_BACKOFF_INTERVALS = 4;
/** Refused polls in a row that say the credential is gone, not a server's passing mistake. */
export const CREDENTIAL_REFUSALS = 3;

interface JobRun {
  job: PollJob;
  nextDueAt: number;
  failures: number;
  running: Promise<void> | undefined;
  finishedAt: number;
}

/**
 * node-cron's own lines, through the process's logger: by itself it writes them to the
 * console in colour, past the log level and the JSON format (CI: a demo under load printed
 * "[NODE-CRON] [WARN] missed execution ..." with terminal escapes). Its warnings are of a
 * tick missed or blocked by the one before: harmless here, as the next tick starts what is
 * due by the clock, so they are debug lines.
 */
function cronLogger(logger: Logger): NonNullable<TaskOptions['logger']> {
  const line = (level: 'debug' | 'error') => (message: string | Error, err?: Error) => {
    const error = err ?? (message instanceof Error ? message : undefined);
    logger[level]({ source: 'node-cron', ...(error === undefined ? {} : { err: errorFields(error) }) }, `node-cron: ${typeof message === 'string' ? message : message.message}`);
  };
  return { debug: line('debug'), info: line('debug'), warn: line('debug'), error: line('error') };
}

/**
 * Runs every poll job at its interval. node-cron ticks once a second and each tick starts
 * the jobs that are due: a job never overlaps itself, a failing job backs off on its own,
 * and after downtime each job is simply due once (no burst of missed ticks).
 */
export class Poller {
  private readonly runs: JobRun[];
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly logger: Logger;
  private readonly driftThreshold: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private task: ScheduledTask | undefined;
  private readonly abort = new AbortController();
  /** Ends, at stop, the polls still waiting their turn at the rate gate: only those sent get the grace. */
  private readonly stopWaiting = new AbortController();
  private stopping = false;
  /** Announced rebalances whose added tokens were looked up already. */
  private readonly pricedRebalances = new Set<string>();
  /** The 401s since the last poll that succeeded, if any, and whether onCredentialRefused was called. */
  private refused: { since: number; count: number } | undefined;
  private refusalReported = false;
  private readonly shortestIntervalMs: number;

  constructor(private readonly o: PollerOptions) {
    this.clock = o.clock ?? systemClock;
    this.random = o.random ?? Math.random;
    this.logger = o.logger ?? silentLogger;
    this.driftThreshold = o.driftThreshold ?? 0.02;
    this.backoffBaseMs = o.backoffBaseMs ?? 5_000;
    this.backoffMaxMs = o.backoffMaxMs ?? 300_000;
    this.shortestIntervalMs = Math.min(...o.jobs.map((j) => j.intervalMs));
    // Each shutdown signal is shared by every request, each adding a listener while it waits or runs.
    setMaxListeners(0, this.abort.signal, this.stopWaiting.signal);
    const now = this.clock.now();
    const last = new Map(o.store.jobStates().map((s) => [s.job, s.lastSuccessAt]));
    this.runs = o.jobs.map((job) => {
      const lastSuccess = last.get(job.name);
      // Due at once if its interval has passed while we were down: one catch-up fetch.
      const nextDueAt = lastSuccess == null ? now : Math.min(now + job.intervalMs, Math.max(now, lastSuccess + job.intervalMs));
      return { job, nextDueAt, failures: 0, running: undefined, finishedAt: 0 };
    });
  }

  /** Starts the once-a-second tick. */
  start(): void {
    if (this.task) return;
    // Six fields: every second, which is TICK_MS.
    this.task = cron.schedule('* * * * * *', () => this.tick(), { name: 'indexbot-poller', noOverlap: true, logger: cronLogger(this.logger) });
    this.tick();
  }

  /** Starts every job that is due and not running; returns the runs it started. */
  tick(): Promise<void>[] {
    if (this.stopping) return [];
    const now = this.clock.now();
    const started: Promise<void>[] = [];
    for (const run of this.runs) {
      // Ticks come a second apart with a few ms of jitter: a job due before the next tick is
      // half way run now, or a 15 s job would run every 16 s whenever this tick came early.
      if (run.running || now < run.nextDueAt - TICK_MS / 2) continue;
      run.running = this.runJob(run).finally(() => {
        run.running = undefined;
      });
      started.push(run.running);
    }
    return started;
  }

  /** When each job runs next, for status. */
  schedule(): { job: string; intervalMs: number; nextDueAt: number; failures: number; running: boolean }[] {
    return this.runs.map((r) => ({ job: r.job.name, intervalMs: r.job.intervalMs, nextDueAt: r.nextDueAt, failures: r.failures, running: !!r.running }));
  }

  /**
   * Stops starting jobs, drops the requests still waiting at the rate gate (a gate pacing slowly
   * held a stop for the whole grace: Docker kills after 10 s), waits up to `graceMs` for those
   * sent, then aborts them.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    this.stopWaiting.abort(new Error('poller stopped'));
    if (this.task) {
      await this.task.stop();
      await this.task.destroy();
      this.task = undefined;
    }
    const inFlight = this.runs.flatMap((r) => (r.running ? [r.running] : []));
    if (inFlight.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), graceMs);
    });
    const outcome = await Promise.race([Promise.allSettled(inFlight), grace]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      this.logger.warn({ inFlight: inFlight.length, graceMs }, 'polls still running at shutdown; aborting them');
      this.abort.abort(new Error('poller stopped'));
      await Promise.allSettled(inFlight);
    }
  }

  /**
   * What an announcement names must have a price before it is stored (strategies, which read
   * the stored events, act on it at once): a token a rebalance adds is in no composition yet,
   * and on a new database nothing is cached at all when the feed shows an announcement already
   * made, so an order for a token it changes, or for the index itself, was refused as having
   * no price (trial 24: "no price for index:dindex"). The token list, and the performance of
   * each index with no value yet, are read first at high priority. Once per rebalance: what
   * the server lacks does not make every poll fetch it again. A failure here only delays those
   * prices until their own jobs run. Returns the events those reads stored.
   */
  private async priceAnnounced(rebalances: Rebalance[] | undefined, at: number): Promise<IndexbotEvent[]> {
    const pending = (rebalances ?? []).filter((r) => r.status === 'announced' && !this.pricedRebalances.has(r.id));
    for (const r of pending) this.pricedRebalances.add(r.id);
    const tokens = pending.flatMap((r) => r.changes ?? []).filter((c) => this.o.store.tokenPriceAt(c.address, at) === undefined);
    const indexes = [...new Set(pending.map((r) => r.index_id))].filter((id) => this.o.store.navAt(id, at) === undefined);
    const reads: { kind: 'tokens' | 'performance'; indexId?: string; what: Record<string, unknown> }[] = [
      ...(tokens.length === 0 ? [] : [{ kind: 'tokens' as const, what: { tokens: tokens.map((c) => c.symbol) } }]),
      ...indexes.map((indexId) => ({ kind: 'performance' as const, indexId, what: { index: indexId } })),
    ];
    const events: IndexbotEvent[] = [];
    for (const read of reads) {
      try {
        const snapshot = await this.o.client.snapshot(read.kind, read.indexId, { priority: 'high', signal: this.abort.signal, waitSignal: this.stopWaiting.signal });
        events.push(...ingest(this.o.store, snapshot, read.indexId, this.clock.now(), this.driftThreshold).events);
      } catch (e) {
        // Stopping: the poll is dropped whole, and the next start stores the announcement with its prices.
        if (this.stoppedBy(e)) throw e;
        this.logger.warn(
          { ...read.what, error: errorFields(storeFailure(e)) },
          `could not read ${read.kind === 'tokens' ? 'the token list for the tokens' : 'the value of the index'} a rebalance announcement names; no price until the ${read.kind} job runs`,
        );
      }
    }
    return events;
  }

  /** Counts a 401; other failures (a 5xx between two) say nothing of the credential either way. */
  private credentialRefused(error: Error): void {
    const now = this.clock.now();
    this.refused = { since: this.refused?.since ?? now, count: (this.refused?.count ?? 0) + 1 };
    if (this.refusalReported || this.refused.count < CREDENTIAL_REFUSALS || now - this.refused.since < 2 * this.shortestIntervalMs) return;
    this.refusalReported = true;
    this.o.onCredentialRefused?.({ since: this.refused.since, refusals: this.refused.count, error });
  }

  /** Whether `e` is the stop itself: the grace ran out (abort), or the request was still waiting its turn. */
  private stoppedBy(e: unknown): boolean {
    return this.abort.signal.aborted || e === this.stopWaiting.signal.reason;
  }

  private async runJob(run: JobRun): Promise<void> {
    const { job } = run;
    const started = this.clock.now();
    const lateMs = started - Math.max(run.nextDueAt, run.finishedAt);
    let ok = false;
    let stopped = false;
    try {
      const snapshot = await this.o.client.snapshot(job.kind, job.indexId, { signal: this.abort.signal, waitSignal: this.stopWaiting.signal });
      const priced = job.kind === 'rebalancing' ? await this.priceAnnounced(snapshot.value as Rebalance[] | undefined, started) : [];
      const fetchedAt = this.clock.now();
      const result = ingest(this.o.store, snapshot, job.indexId, fetchedAt, this.driftThreshold);
      if (result.outcome === 'rejected') {
        this.logger.warn({ job: job.name, error: snapshot.error?.toJSON() }, 'payload failed validation; stored as rejected');
      }
      this.o.store.recordJobRun(job.name, fetchedAt);
      this.refused = undefined;
      run.failures = 0;
      run.nextDueAt = started + job.intervalMs;
      ok = true;
      const events = [...priced, ...result.events];
      if (events.length > 0) this.o.onEvents?.(events);
    } catch (e) {
      // Stopped, not failed: nothing to back off from or record.
      stopped = this.stoppedBy(e);
      if (stopped) return;
      run.failures++;
      // The rebalancing feed backs off from its interval to a few intervals at most: an
      // announcement made while the server misbehaves is seen soon after it recovers.
      const urgent = SNAPSHOT_PRIORITY[job.kind] === 'high';
      const step = urgent ? job.intervalMs : Math.max(job.intervalMs, this.backoffBaseMs);
      const cap = urgent ? URGENT_BACKOFF_INTERVALS * job.intervalMs : Math.max(this.backoffMaxMs, job.intervalMs);
      const delay = Math.min(cap, step * 2 ** (run.failures - 1));
      run.nextDueAt = this.clock.now() + delay * (0.8 + 0.4 * this.random());
      // A store failure rolled the whole poll back: the next run fetches and stores it again.
      const failure = storeFailure(e);
      this.logger.error({ job: job.name, failures: run.failures, retryInMs: Math.round(run.nextDueAt - this.clock.now()), error: errorFields(failure) }, 'poll failed');
      if (failure instanceof IndexbotError && failure.code === 'API_UNAUTHORIZED') this.credentialRefused(failure);
      try {
        this.o.store.recordJobRun(job.name, this.clock.now(), failure instanceof Error ? failure.message : String(failure));
      } catch (storeError) {
        this.logger.error({ job: job.name, error: failureFields(storeError) }, 'could not record the failed poll');
      }
    } finally {
      run.finishedAt = this.clock.now();
      // A poll the stop dropped neither succeeded nor failed: metrics and benchmarks do not count it.
      if (!stopped) this.o.onPoll?.({ job: job.name, ok, lateMs, durationMs: run.finishedAt - started });
    }
  }
}
