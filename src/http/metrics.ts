import { statSync } from 'node:fs';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RequestObserver } from '../api/index.ts';
import { EVENT_TYPES, type IndexbotEvent, UNTIMED_EVENT_TYPES } from '../detect/index.ts';
import type { RateGateState, SharedBudgetState } from '../ratelimit/index.ts';
import type { StreamHeartbeat } from '../stream/index.ts';
import type { Fill } from '../strategy/index.ts';

/** What the gauges read at scrape time; every function is a cheap read of state the daemon holds. */
export interface MetricSources {
  gates(): RateGateState[];
  jobs(): { job: string; lastSuccessAt: number | null }[];
  strategies(): { strategy: string; equity: number; cash: number; positions: unknown[]; parked: number; paused: boolean }[];
  outbox(): { sink: string; pending: number; oldestPendingAt: number | null }[];
  dbPath: string;
  lastEventSeq(): number;
  /** A runner's last answered read of the event stream (none for a role that polls). */
  streamRead(): { value: StreamHeartbeat; updatedAt: number } | undefined;
  /** Events a runner never got: the stream had lost them before it read that far. */
  streamMissedEvents(): number;
  /** A collector's events in the log after the last one it published to the event stream. */
  unpublishedEvents(): number;
  now(): number;
}

/** Defines a gauge read from the daemon at each scrape. */
type DefineGauge = <L extends string>(name: string, help: string, labelNames: L[], read: (g: Gauge<L>, s: MetricSources) => void) => Gauge<L>;

/**
 * The daemon's Prometheus registry. Counters and histograms are pushed from observer hooks
 * where things happen (client, poller, events, strategies, alert sinks); gauges are read from
 * the daemon's state when Prometheus scrapes. Every label takes a bounded set of values:
 * endpoint templates, job and strategy and sink names from the config, event types.
 */
export class DaemonMetrics {
  readonly registry = new Registry();
  private sources: MetricSources | undefined;
  private readonly requests: Counter<'endpoint' | 'status'>;
  private readonly requestSeconds: Histogram<'endpoint'>;
  private readonly rateLimited: Counter<'endpoint'>;
  private readonly retries: Counter<'endpoint'>;
  private readonly polls: Counter<'outcome'>;
  private readonly pollLateness: Histogram;
  private readonly events: Counter<'type'>;
  private readonly detectionDelay: Histogram<'type'>;
  private readonly fills: Counter<'strategy' | 'side'>;
  private readonly deliveries: Counter<'sink' | 'outcome'>;
  private readonly giveUps: Counter<'sink'>;
  private readonly startedAt: number;

  /**
   * @param o.streamReader A runner, which reads the event stream: only its registry has the
   * stream's gauges (a collector's or a single process's read 0, as if fresh). @default false
   * @param o.streamWriter A collector, which publishes its events to the stream: only its
   * registry has the gauge of what it has not published yet. @default false
   * @param o.startedAt When this process started. @default now
   */
  constructor(private readonly o: { streamReader?: boolean; streamWriter?: boolean; startedAt?: number } = {}) {
    this.startedAt = o.startedAt ?? Date.now();
    const registers = [this.registry];
    // A runner polls nothing and detects nothing: a polls_total held at 0 there would set off every "the bot stopped polling" alert.
    const pollers = o.streamReader ? [] : registers;
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({
      name: 'indexbot_api_requests_total',
      help: 'API request attempts (retries and 429 re-queues included) by endpoint template and HTTP status ("none": no response)',
      labelNames: ['endpoint', 'status'],
      registers: pollers,
    });
    this.requestSeconds = new Histogram({
      name: 'indexbot_api_request_duration_seconds',
      help: 'Time of one API request attempt, rate-gate wait excluded',
      labelNames: ['endpoint'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: pollers,
    });
    this.rateLimited = new Counter({ name: 'indexbot_api_rate_limited_total', help: 'API responses with status 429', labelNames: ['endpoint'], registers: pollers });
    this.retries = new Counter({ name: 'indexbot_api_retries_total', help: 'API requests retried after a network error, timeout or 5xx', labelNames: ['endpoint'], registers: pollers });
    this.polls = new Counter({ name: 'indexbot_polls_total', help: 'Poll jobs run, by outcome', labelNames: ['outcome'], registers: pollers });
    this.pollLateness = new Histogram({
      name: 'indexbot_poll_lateness_seconds',
      help: 'How long after its due time a poll job started',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: pollers,
    });
    this.events = new Counter({ name: 'indexbot_events_total', help: 'Events detected and logged, by type', labelNames: ['type'], registers: pollers });
    this.detectionDelay = new Histogram({
      name: 'indexbot_event_detection_delay_seconds',
      help: 'Time from when a fact happened on the server (occurredAt) to its detection; facts from before this process started, and those the API gives no time for, are not timed',
      labelNames: ['type'],
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600],
      registers: pollers,
    });
    this.fills = new Counter({ name: 'indexbot_strategy_fills_total', help: 'Paper fills committed, by strategy and side', labelNames: ['strategy', 'side'], registers });
    this.deliveries = new Counter({
      name: 'indexbot_alert_deliveries_total',
      help: 'Alert delivery attempts by sink and outcome (delivered, failed: will retry)',
      labelNames: ['sink', 'outcome'],
      registers,
    });
    this.giveUps = new Counter({ name: 'indexbot_alert_give_ups_total', help: 'Alerts given up (refused, or still failing past giveUpAfterHours)', labelNames: ['sink'], registers });
    // Every value of a label known in advance starts at 0: a series that first appears at its
    // first increase is invisible to increase() and to an alert on it until then.
    for (const outcome of ['ok', 'failed']) this.polls.inc({ outcome }, 0);
    // The event's type as the README, the events API, the SSE stream and the logs spell it (trial 29: a query written from them matched nothing).
    for (const type of EVENT_TYPES) this.events.inc({ type }, 0);
    this.defineGauges(registers);
  }

  /**
   * Starts at 0 the counters of the endpoints this process polls, the strategies it runs and
   * the alert sinks it delivers to, for the reason the constructor starts the polls' and
   * events' counters. (Requests by status are not: the statuses are not known in advance.)
   */
  expect(o: { endpoints?: readonly string[]; strategies?: readonly string[]; sinks?: readonly string[] }): void {
    for (const endpoint of o.endpoints ?? []) {
      this.rateLimited.inc({ endpoint }, 0);
      this.retries.inc({ endpoint }, 0);
    }
    for (const strategy of o.strategies ?? []) for (const side of ['buy', 'sell']) this.fills.inc({ strategy, side }, 0);
    for (const sink of o.sinks ?? []) {
      for (const outcome of ['delivered', 'failed']) this.deliveries.inc({ sink, outcome }, 0);
      this.giveUps.inc({ sink }, 0);
    }
  }

  /** Connects the scrape-time gauges to the running daemon. */
  bind(sources: MetricSources): void {
    this.sources = sources;
  }

  readonly client: RequestObserver = {
    onRequest: (r) => {
      const status = r.status === null ? 'none' : String(r.status);
      this.requests.inc({ endpoint: r.endpoint, status });
      this.requestSeconds.observe({ endpoint: r.endpoint }, r.durationMs / 1000);
      if (r.status === 429) this.rateLimited.inc({ endpoint: r.endpoint });
    },
    onRetry: (endpoint) => this.retries.inc({ endpoint }),
  };

  onPoll(p: { ok: boolean; lateMs: number }): void {
    this.polls.inc({ outcome: p.ok ? 'ok' : 'failed' });
    this.pollLateness.observe(Math.max(0, p.lateMs) / 1000);
  }

  onEvents(events: readonly IndexbotEvent[]): void {
    // A runner's events were detected, counted and timed by its collector; its stream gauges say whether it is fed.
    if (this.o.streamReader) return;
    for (const e of events) {
      this.events.inc({ type: e.type });
      // What happened before the start (a rebalance announced while the bot was down) measures the downtime, not detection.
      if (e.occurredAt >= this.startedAt && !UNTIMED_EVENT_TYPES.has(e.type)) this.detectionDelay.observe({ type: e.type }, Math.max(0, e.detectedAt - e.occurredAt) / 1000);
    }
  }

  onFill(strategy: string, fill: Fill): void {
    this.fills.inc({ strategy, side: fill.side });
  }

  onAlertAttempt(sink: string, outcome: 'delivered' | 'failed' | 'given_up'): void {
    if (outcome === 'given_up') this.giveUps.inc({ sink });
    else this.deliveries.inc({ sink, outcome });
  }

  async render(): Promise<string> {
    return this.registry.metrics();
  }

  private defineGauges(registers: Registry[]): void {
    const gauge = <L extends string>(name: string, help: string, labelNames: L[], read: (g: Gauge<L>, s: MetricSources) => void) =>
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers,
        collect() {
          this.reset();
          const s = self.sources;
          if (s) read(this, s);
        },
      });
    const self = this;
    if (!this.o.streamReader) this.definePollerGauges(gauge);
    if (this.o.streamReader) this.defineStreamGauges(gauge);
    if (this.o.streamWriter) {
      // What a collector cut off from Redis holds back: its runners see none of it until it is published.
      gauge('indexbot_event_stream_unpublished', 'Events in the log not yet published to the event stream', [], (g, s) => g.set(s.unpublishedEvents()));
    }
    gauge('indexbot_event_log_last_seq', 'Sequence number of the newest event in the log', [], (g, s) => g.set(s.lastEventSeq()));
    gauge('indexbot_strategy_equity_usd', 'Paper equity (cash plus positions at the latest cached prices), per strategy', ['strategy'], (g, s) => {
      for (const x of s.strategies()) g.set({ strategy: x.strategy }, x.equity);
    });
    gauge('indexbot_strategy_cash_usd', 'Paper cash, per strategy', ['strategy'], (g, s) => {
      for (const x of s.strategies()) g.set({ strategy: x.strategy }, x.cash);
    });
    gauge('indexbot_strategy_positions', 'Open paper positions, per strategy', ['strategy'], (g, s) => {
      for (const x of s.strategies()) g.set({ strategy: x.strategy }, x.positions.length);
    });
    gauge('indexbot_strategy_parked_events', 'Events parked after failing every attempt, per strategy', ['strategy'], (g, s) => {
      for (const x of s.strategies()) g.set({ strategy: x.strategy }, x.parked);
    });
    gauge('indexbot_strategy_paused', '1 when the strategy is paused', ['strategy'], (g, s) => {
      for (const x of s.strategies()) g.set({ strategy: x.strategy }, x.paused ? 1 : 0);
    });
    gauge('indexbot_alert_outbox_pending', 'Alerts queued and not yet delivered, per sink', ['sink'], (g, s) => {
      for (const x of s.outbox()) g.set({ sink: x.sink }, x.pending);
    });
    gauge('indexbot_alert_outbox_oldest_pending_age_seconds', 'Age of the oldest undelivered alert, per sink (0: none pending)', ['sink'], (g, s) => {
      const now = s.now();
      for (const x of s.outbox()) g.set({ sink: x.sink }, x.oldestPendingAt === null ? 0 : (now - x.oldestPendingAt) / 1000);
    });
    gauge('indexbot_db_size_bytes', 'Size of the SQLite database with its write-ahead log', [], (g, s) => g.set(fileSize(s.dbPath) + fileSize(`${s.dbPath}-wal`)));
  }

  /** A poller's gauges: its rate gates, the budget it shares, its jobs. A runner has none of them. */
  private definePollerGauges(gauge: DefineGauge): void {
    gauge('indexbot_rate_gate_limit', 'Requests per window the rate gate paces to, per credential', ['gate'], (g, s) => {
      for (const x of s.gates()) g.set({ gate: x.name }, x.limit);
    });
    gauge('indexbot_rate_gate_window_seconds', 'Length of the rate window, per credential', ['gate'], (g, s) => {
      for (const x of s.gates()) g.set({ gate: x.name }, x.windowMs / 1000);
    });
    gauge('indexbot_rate_gate_remaining', 'Requests the server said were left in its window, minus those sent since', ['gate'], (g, s) => {
      for (const x of s.gates()) if (x.remaining !== undefined) g.set({ gate: x.name }, x.remaining);
    });
    gauge('indexbot_rate_gate_tokens', 'Tokens the rate gate holds now', ['gate'], (g, s) => {
      for (const x of s.gates()) g.set({ gate: x.name }, x.tokens);
    });
    gauge('indexbot_rate_gate_queued', 'Requests waiting at the rate gate', ['gate'], (g, s) => {
      for (const x of s.gates()) g.set({ gate: x.name }, x.queued);
    });
    gauge('indexbot_rate_gate_pause_seconds', 'Seconds the rate gate stays paused after a 429 (0: not paused)', ['gate'], (g, s) => {
      const now = s.now();
      for (const x of s.gates()) g.set({ gate: x.name }, Math.max(0, ((x.pausedUntil ?? now) - now) / 1000));
    });
    // The budget shared through Redis with other processes on the credential (none: no series).
    // Processes are counted, not named: their ids change with every restart.
    const shared = (name: string, help: string, value: (b: SharedBudgetState) => number | undefined) =>
      gauge(name, help, ['gate'], (g, s) => {
        for (const x of s.gates()) {
          const v = x.shared && value(x.shared);
          if (v !== undefined) g.set({ gate: x.name }, v);
        }
      });
    shared('indexbot_shared_budget_limit', 'Requests per window of the budget shared through Redis, per credential', (b) => b.limit);
    shared('indexbot_shared_budget_burst', 'Most tokens the shared budget holds (its bucket size), per credential', (b) => b.burst);
    shared('indexbot_shared_budget_remaining', 'Tokens left in the shared budget at this process’s last take or beat (no series while Redis is unreachable)', (b) => b.tokens);
    shared('indexbot_shared_budget_processes', 'Processes that drew on the shared budget in the last minute', (b) => b.processes.length);
    shared('indexbot_shared_budget_fallback', '1 while Redis is unreachable and this process paces to its local share of the budget', (b) => (b.mode === 'local' ? 1 : 0));
    shared('indexbot_shared_budget_local_share', 'N of the local fallback: it paces to 1/N of the budget', (b) => b.share);
    gauge('indexbot_poll_last_success_age_seconds', 'Age of the last successful poll, per job', ['job'], (g, s) => {
      const now = s.now();
      for (const j of s.jobs()) if (j.lastSuccessAt !== null) g.set({ job: j.job }, (now - j.lastSuccessAt) / 1000);
    });
  }

  /** A runner's stream; one group per runner, so no label. */
  private defineStreamGauges(gauge: DefineGauge): void {
    const stream = (name: string, help: string, value: (read: { value: StreamHeartbeat; updatedAt: number }, now: number) => number | null) =>
      gauge(name, help, [], (g, s) => {
        const read = s.streamRead();
        const v = read && value(read, s.now());
        // No read yet, or one that could not tell: no sample (a label-less gauge reset reads 0).
        if (v === undefined || v === null) g.remove({});
        else g.set(v);
      });
    stream('indexbot_event_stream_lag', "Entries of the event stream not yet delivered to this runner's group, at its last read", (r) => r.value.lag);
    stream('indexbot_event_stream_pending', "Entries delivered to this runner's group and not yet acknowledged, at its last read", (r) => r.value.pending);
    stream('indexbot_event_stream_last_read_age_seconds', "Age of this runner's last answered read of the event stream", (r, now) => (now - r.updatedAt) / 1000);
    // Kept in the database across restarts, so a gauge: a counter would start from 0 at each.
    gauge(
      'indexbot_event_stream_missed_events',
      'Events this runner never got, since its database began: the stream had lost them (Redis restarted empty, or trimmed them) before it read that far',
      [],
      (g, s) => g.set(s.streamMissedEvents()),
    );
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
