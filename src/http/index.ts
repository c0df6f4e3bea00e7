import type { RequestObserver } from '../api/index.ts';
import { type Config, DEFAULT_READY_MAX_AGE_S } from '../config/index.ts';
import type { Logger } from '../core/index.ts';
import type { IndexbotEvent } from '../detect/index.ts';
import { HTTP_FACE, type HttpFaceRecord } from '../store/index.ts';
import { STREAM_HEARTBEAT, STREAM_MISSED, type StreamHeartbeat, type StreamMissed, unpublishedEvents } from '../stream/index.ts';
import type { Fill } from '../strategy/index.ts';
import { DaemonMetrics } from './metrics.ts';
import { type BotControl, HttpServer } from './server.ts';
import { EventStream } from './stream.ts';
import { TelegramCommands } from './telegram.ts';

export { DaemonMetrics, type MetricSources } from './metrics.ts';
export { type BotControl, HttpServer } from './server.ts';
export { EventStream } from './stream.ts';
export { TelegramCommands } from './telegram.ts';
export type { StatusReport } from './queries.ts';

/**
 * The daemon's remote faces: the HTTP server (metrics, API, SSE, dashboard) when `http` is
 * configured, and Telegram commands for each telegram sink with `commands: true`. Made before
 * the pipeline so its hooks can be handed in; listening before it starts, serving once it runs. With neither
 * configured every hook is a no-op.
 */
export class RemoteFaces {
  readonly metrics: DaemonMetrics | undefined;
  private readonly stream: EventStream | undefined;
  private server: HttpServer | undefined;
  private telegram: TelegramCommands[] = [];
  /** Where the HTTP server listens, once started. */
  url: string | undefined;

  /**
   * @param o.streamReader A runner's faces: its metrics include the event stream's gauges.
   * @param o.streamWriter A collector's: its metrics include the events it has not published.
   */
  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
    o: { streamReader?: boolean; streamWriter?: boolean } = {},
  ) {
    this.metrics = config.http ? new DaemonMetrics(o) : undefined;
    this.stream = config.http ? new EventStream() : undefined;
  }

  get clientObserver(): RequestObserver | undefined {
    return this.metrics?.client;
  }

  onPoll(p: { ok: boolean; lateMs: number }): void {
    this.metrics?.onPoll(p);
  }

  onEvents(events: readonly IndexbotEvent[]): void {
    this.metrics?.onEvents(events);
    this.stream?.events(events);
  }

  onFill(strategy: string, fill: Fill, label: string): void {
    this.metrics?.onFill(strategy, fill);
    this.stream?.fill(strategy, fill, label);
  }

  /** The endpoints this process polls, the strategies and alert sinks it runs: their counters start at 0. */
  expect(o: Parameters<DaemonMetrics['expect']>[0]): void {
    this.metrics?.expect(o);
  }

  onAlertAttempt(sink: string, outcome: 'delivered' | 'failed' | 'given_up'): void {
    this.metrics?.onAlertAttempt(sink, outcome);
  }

  /**
   * Takes the HTTP port, before the pipeline starts: a port in use stops the start before any
   * request is sent. Until `start`, every route but /healthz answers 503.
   */
  async listen(): Promise<void> {
    const { http, httpUnused } = this.config;
    if (httpUnused) this.logger.warn({}, httpUnused);
    if (!http || !this.metrics || !this.stream) return;
    this.server = new HttpServer({ config: http, metrics: this.metrics, stream: this.stream, logger: this.logger.child({ component: 'http' }) });
    this.url = await this.server.listen();
  }

  async start(control: BotControl): Promise<void> {
    const log = this.logger.child({ component: 'http' });
    const { http } = this.config;
    // For `status`, whose advice for the running process depends on it: where it answers, if anywhere.
    control.store.setRuntime(
      HTTP_FACE,
      { pid: process.pid, url: this.server ? (this.url ?? null) : null, token: http?.token !== undefined, readyMaxAgeS: http?.readyMaxAgeS ?? DEFAULT_READY_MAX_AGE_S } satisfies HttpFaceRecord,
      Date.now(),
    );
    if (http && this.metrics && this.server) {
      this.metrics.bind({
        jobs: () => control.store.jobStates(),
        // Five gauges read the books: valued once per scrape, not five times.
        strategies: oncePerScrape(() => {
          const paused = new Set(control.strategies.paused());
          return control
            .strategyBooks()
            .filter((s) => control.strategies.names.includes(s.strategy))
            .map((s) => ({ ...s, paused: paused.has(s.strategy) }));
        }),
        gates: oncePerScrape(control.gates),
        outbox: oncePerScrape(() => control.store.outbox.summary()),
        dbPath: control.store.path,
        lastEventSeq: () => control.store.lastEventSeq(),
        streamRead: () => control.store.runtime<StreamHeartbeat>(STREAM_HEARTBEAT),
        streamMissedEvents: () => control.store.runtime<StreamMissed>(STREAM_MISSED)?.value.events ?? 0,
        unpublishedEvents: () => unpublishedEvents(control.store),
        now: Date.now,
      });
      this.server.serve(control);
      log.info({ url: this.url, token: http.token !== undefined }, 'http face listening');
    }
    for (const sink of this.config.alerts.sinks) {
      if (sink.type !== 'telegram' || !sink.commands) continue;
      const t = new TelegramCommands({ sink, control, logger: log.child({ face: 'telegram' }) });
      t.start();
      this.telegram.push(t);
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.telegram.map((t) => t.stop()));
    await this.server?.close();
  }
}

/** A read that every gauge of one scrape shares: a scrape reads all gauges within a few ms. */
function oncePerScrape<T>(read: () => T, ms = 250): () => T {
  let cached: { at: number; value: T } | undefined;
  return () => {
    const now = performance.now();
    if (!cached || now - cached.at > ms) cached = { at: now, value: read() };
    return cached.value;
  };
}
