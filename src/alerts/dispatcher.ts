import { type Clock, type Logger, durationText, silentLogger, sleep, systemClock } from '../core/index.ts';
import { type OutboxRow, type SnapshotStore, failureFields } from '../store/index.ts';
import { eventAlert, strategyAlert, strategyAlertKey } from './format.ts';
import { type Alert, HttpSender, type Sender, type SinkConfig, matches, matchesStrategyAlert } from './sinks.ts';

export interface DispatcherOptions {
  store: SnapshotStore;
  sinks: SinkConfig[];
  /** @default new HttpSender() */
  sender?: Sender;
  /** @default systemClock */
  clock?: Clock;
  /** @default silentLogger */
  logger?: Logger;
  /** An alert still undelivered this long after it was queued is given up. @default 24 h */
  giveUpAfterMs?: number;
  /** First retry delay; doubles per failure in a row (reset once the sink accepts or says when) up to `maxRetryMs`. @default 1000 */
  retryBaseMs?: number;
  /** @default 300000 */
  maxRetryMs?: number;
  /** A 429's Retry-After is honoured up to this: a sink's queue is in order, so a long wish stalls all of it. @default 60000 */
  maxRetryAfterMs?: number;
  /** How often an idle sink looks for new events without being notified. @default 1000 */
  idleMs?: number;
  /**
   * Whether events are alerted, or only the strategies' alerts: a strategies runner leaves the
   * events to its collector, which alerts each once (every runner would send it again). The
   * events' cursors then follow the log without queueing, so they hold back no pruning.
   * @default true
   */
  alertEvents?: boolean;
  /** Told of each attempt's outcome (metrics). */
  onAttempt?: (sink: string, outcome: 'delivered' | 'failed' | 'given_up') => void;
}

export const alertConsumer = (sink: string) => `alert:${sink}`;
const STRATEGY_ALERTS_SUFFIX = ':strategy-alerts';
/** The sink's cursor in the strategy alerts (their row ids), beside its cursor in the events. */
export const strategyAlertConsumer = (sink: string) => `alert:${sink}${STRATEGY_ALERTS_SUFFIX}`;
export const isStrategyAlertConsumer = (consumer: string) => consumer.startsWith('alert:') && consumer.endsWith(STRATEGY_ALERTS_SUFFIX);

/**
 * Delivers events and strategies' alerts to alert sinks through the outbox. Each sink has its
 * own cursors and its own loop: new matching items are queued with the cursor move in one
 * transaction, then sent in the order queued, with the alert's id as idempotency key; a
 * failing head holds back what follows, so a receiver never sees a completion before its
 * announcement. A delivery is recorded only after the sink accepted it, so a crash in
 * between sends it again, never loses it. A failing sink backs off (honouring Retry-After)
 * without holding up the other sinks.
 */
export class AlertDispatcher {
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly sender: Sender;
  private readonly giveUpAfterMs: number;
  private readonly retryBaseMs: number;
  private readonly maxRetryMs: number;
  private readonly maxRetryAfterMs: number;
  /** Per sink: failures in a row without an answer saying when, for the backoff. */
  private readonly failuresInRow = new Map<string, number>();
  /**
   * Per sink: deliveries the sink accepted that the store has not recorded yet (a full disk).
   * They are recorded before anything else is sent, so none is sent twice.
   */
  private readonly unrecorded = new Map<string, Map<string, number>>();
  private readonly idleMs: number;
  private readonly wakers = new Map<string, () => void>();
  private stopped = false;
  private loops: Promise<void>[] = [];

  constructor(private readonly o: DispatcherOptions) {
    const names = o.sinks.map((s) => s.name);
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup !== undefined) throw new TypeError(`Expected unique sink names, got \`${dup}\` twice`);
    this.clock = o.clock ?? systemClock;
    this.log = o.logger ?? silentLogger;
    this.sender = o.sender ?? new HttpSender();
    this.giveUpAfterMs = o.giveUpAfterMs ?? 86_400_000;
    this.retryBaseMs = o.retryBaseMs ?? 1_000;
    this.maxRetryMs = o.maxRetryMs ?? 300_000;
    this.maxRetryAfterMs = o.maxRetryAfterMs ?? 60_000;
    this.idleMs = o.idleMs ?? 1_000;
    for (const [name, v] of [
      ['giveUpAfterMs', this.giveUpAfterMs],
      ['retryBaseMs', this.retryBaseMs],
      ['maxRetryMs', this.maxRetryMs],
      ['maxRetryAfterMs', this.maxRetryAfterMs],
    ] as const) {
      if (!Number.isFinite(v) || v <= 0) throw new TypeError(`Expected \`${name}\` to be a number > 0, got \`${String(v)}\``);
    }
  }

  start(): void {
    this.startNewSinksAtTheEnd();
    this.loops = this.o.sinks.map((s) => this.loop(s));
  }

  /**
   * A sink new to this database starts after what the database already holds: a channel
   * added to a bot that has run for months is not sent its whole history (trial 28), only
   * what is detected from now on. A sink it knows catches up on what came while no process ran.
   */
  private startNewSinksAtTheEnd(): void {
    const { store } = this.o;
    const [afterEvent, afterStrategyAlert] = [store.lastEventSeq(), store.strategies.lastAlertId()];
    for (const sink of this.o.sinks) {
      const started = store.startCursors(
        [
          [alertConsumer(sink.name), afterEvent],
          [strategyAlertConsumer(sink.name), afterStrategyAlert],
        ],
        this.clock.now(),
      );
      if (started.some(([, position]) => position > 0)) this.log.info({ sink: sink.name, afterEvent, afterStrategyAlert }, 'alert sink new to this database: it is sent what happens from now on');
    }
  }

  /** New events are in the log. */
  notify(): void {
    for (const wake of this.wakers.values()) wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.notify();
    await Promise.allSettled(this.loops);
  }

  /** Queues what is new and tries what is due, once, for every sink (commands and tests). */
  async runOnce(): Promise<void> {
    await Promise.all(this.o.sinks.map((s) => this.step(s)));
  }

  private async loop(sink: SinkConfig): Promise<void> {
    let failures = 0;
    // Armed before each round, so news that arrives while a round sends is not lost to the idle wait.
    let woken = new AbortController();
    this.wakers.set(sink.name, () => woken.abort());
    while (!this.stopped) {
      let wait: number;
      try {
        await this.step(sink);
        failures = 0;
        const next = this.o.store.outbox.nextDue(sink.name);
        wait = Math.min(this.idleMs, next === undefined ? this.idleMs : Math.max(0, next - this.clock.now()));
      } catch (e) {
        // The store is busy or the disk is full: nothing was recorded, so a later round redoes it.
        failures++;
        wait = Math.min(this.maxRetryMs, this.retryBaseMs * 2 ** (failures - 1));
        this.log.error({ sink: sink.name, failures, retryInMs: wait, error: failureFields(e) }, 'alert sink round failed; retrying');
        // A store that refused keeps its backoff: only news from now on (or stop) ends it early.
        woken = new AbortController();
      }
      if (this.stopped) break;
      await sleep(this.clock, wait, woken.signal).catch(() => undefined);
      if (woken.signal.aborted) woken = new AbortController();
    }
    this.wakers.delete(sink.name);
  }

  private async step(sink: SinkConfig): Promise<void> {
    const accepted = this.unrecorded.get(sink.name) ?? new Map<string, number>();
    this.unrecorded.set(sink.name, accepted);
    this.recordAccepted(sink.name, accepted);
    this.enqueue(sink);
    for (const row of this.o.store.outbox.pending(sink.name)) {
      const now = this.clock.now();
      // Given up on time, not only when a send is tried.
      if (now - row.createdAt >= this.giveUpAfterMs) {
        const waited = durationText(now - row.createdAt);
        // Alerts to a sink go in order: one never tried waited behind another (or for a process to run).
        const reason =
          row.attempts === 0
            ? `never tried in the ${waited} since it was queued: an earlier alert to this sink held the line, or no process was running`
            : `still failing after ${waited}${row.lastError ? `: ${row.lastError}` : ''}`;
        this.o.store.outbox.givenUp(sink.name, row.eventId, now, reason);
        this.o.onAttempt?.(sink.name, 'given_up');
        this.log.warn({ sink: sink.name, alert: row.eventId, attempts: row.attempts, reason }, 'alert given up');
        continue;
      }
      // In order: while the head waits out its backoff, nothing behind it jumps ahead.
      if (this.stopped || row.nextAttemptAt > now) return;
      const alert = this.alertOf(row);
      if (!alert) {
        this.o.store.outbox.givenUp(sink.name, row.eventId, this.clock.now(), 'no longer in the database');
        continue;
      }
      const outcome = await this.sender.send(sink, alert);
      const at = this.clock.now();
      if (outcome.ok) {
        this.failuresInRow.set(sink.name, 0);
        accepted.set(row.eventId, at);
        this.o.onAttempt?.(sink.name, 'delivered');
        this.log.info({ sink: sink.name, alert: alert.id, attempts: row.attempts + 1 }, 'alert delivered');
        this.recordAccepted(sink.name, accepted);
        continue;
      }
      if (!outcome.retry) {
        const reason = `refused: ${outcome.reason}`;
        this.o.store.outbox.givenUp(sink.name, row.eventId, at, reason);
        this.o.onAttempt?.(sink.name, 'given_up');
        this.log.warn({ sink: sink.name, alert: alert.id, attempts: row.attempts + 1, reason }, 'alert given up');
        continue;
      }
      // A sink that says when to come back is answering: its wish (bounded) replaces the backoff.
      // After a restart the streak is not in memory: the head alert's attempts carry it on (trial 35: 1 s again after a kill, against a sink still failing).
      const failures = outcome.retryAfterMs === undefined ? (this.failuresInRow.get(sink.name) ?? row.attempts) + 1 : 0;
      this.failuresInRow.set(sink.name, failures);
      const wanted = outcome.retryAfterMs === undefined ? Math.min(this.maxRetryMs, this.retryBaseMs * 2 ** (failures - 1)) : Math.min(this.maxRetryAfterMs, outcome.retryAfterMs);
      const delay = Math.max(0, Math.min(wanted, row.createdAt + this.giveUpAfterMs - at));
      this.o.store.outbox.retryAt(sink.name, row.eventId, at + delay, outcome.reason);
      this.o.onAttempt?.(sink.name, 'failed');
      this.log.warn({ sink: sink.name, alert: alert.id, attempts: row.attempts + 1, reason: outcome.reason, retryInMs: delay }, 'alert delivery failed; will retry');
      return;
    }
  }

  /** Records what the sink accepted; a store that still refuses fails the round before anything is sent. */
  private recordAccepted(sink: string, accepted: Map<string, number>): void {
    for (const [eventId, at] of accepted) {
      this.o.store.outbox.delivered(sink, eventId, at);
      accepted.delete(eventId);
    }
  }

  private alertOf(row: OutboxRow): Alert | undefined {
    if (row.strategyAlertId !== null) {
      const a = this.o.store.strategies.alert(row.strategyAlertId);
      return a && strategyAlert(a, row.eventId);
    }
    const event = this.o.store.eventsAfter(row.seq - 1, 1)[0];
    return event?.id === row.eventId ? eventAlert(event) : undefined;
  }

  /** Queues the sink's new events and strategy alerts, each batch with its cursor move. */
  private enqueue(sink: SinkConfig): void {
    const { store } = this.o;
    if (this.o.alertEvents === false) {
      const top = store.lastEventSeq();
      if (top > store.cursor(alertConsumer(sink.name))) store.setCursor(alertConsumer(sink.name), top, this.clock.now());
    } else {
      this.queueAfter(
        alertConsumer(sink.name),
        (after) => store.eventsAfter(after, 500),
        (e) => e.seq,
        (e, now) => {
          if (matches(sink.filter, e)) store.outbox.enqueue(sink.name, e.id, e.seq, now);
        },
      );
    }
    this.queueAfter(
      strategyAlertConsumer(sink.name),
      (after) => store.strategies.alertsAfter(after, 500),
      (a) => a.id,
      (a, now) => {
        if (matchesStrategyAlert(sink.filter, a)) store.outbox.enqueue(sink.name, strategyAlertKey(a, store.databaseId()), a.seq, now, a.id);
      },
    );
  }

  private queueAfter<T>(consumer: string, read: (after: number) => T[], position: (item: T) => number, queue: (item: T, now: number) => void): void {
    for (;;) {
      const items = read(this.o.store.cursor(consumer));
      if (items.length === 0) return;
      const now = this.clock.now();
      this.o.store.transaction(() => {
        for (const item of items) queue(item, now);
        this.o.store.setCursor(consumer, position(items[items.length - 1]!), now);
      });
    }
  }
}
