import { Redis } from 'ioredis';
import { type Logger, silentLogger } from '../core/index.ts';
import type { SnapshotStore } from '../store/index.ts';
import { EVENT_STREAM, PUBLISH_BATCH, connected, streamConnectionOptions, waitOrWake } from './common.ts';

export interface StreamPublisherOptions {
  store: SnapshotStore;
  redisUrl: string;
  /** @default `indexbot:events` */
  stream?: string;
  /** Entries kept in the stream (approximately); older ones are trimmed. @default 100000 */
  maxLen?: number;
  logger?: Logger;
}

/**
 * Publishes the collector's event log to a Redis Stream, in `seq` order, from a cursor kept in
 * the event log's own store (like any other consumer of it). The stream entry's id is the
 * event's `seq` (`<seq>-0`), so Redis itself refuses a second copy: a collector killed after
 * XADD and before moving its cursor publishes the same seq again on restart, Redis answers
 * "equal or smaller", and that counts as published. Redis down: it logs once, retries with
 * backoff, and the collector goes on polling (its log is the source of truth).
 */
export class StreamPublisher {
  private readonly redis: Redis;
  private readonly stream: string;
  private readonly consumer: string;
  private readonly maxLen: number;
  private readonly logger: Logger;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private failing = false;

  constructor(private readonly o: StreamPublisherOptions) {
    this.stream = o.stream ?? EVENT_STREAM;
    this.consumer = `stream:${this.stream}`;
    this.maxLen = o.maxLen ?? 100_000;
    if (!Number.isInteger(this.maxLen) || this.maxLen < 1_000 || this.maxLen > 100_000_000) {
      throw new TypeError(`Expected \`maxLen\` to be an integer from 1000 to 100000000, got \`${String(o.maxLen)}\``);
    }
    this.logger = o.logger ?? silentLogger;
    this.redis = new Redis(o.redisUrl, streamConnectionOptions(2_000));
    this.redis.on('error', () => {});
  }

  start(): void {
    this.loop = this.run();
  }

  /** New events are in the log. */
  notify(): void {
    this.wake?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    this.redis.disconnect();
  }

  /** Publishes everything after the cursor; returns how many entries it went through. */
  async publishPending(): Promise<number> {
    let done = 0;
    for (;;) {
      const events = this.o.store.eventsAfter(this.o.store.cursor(this.consumer), PUBLISH_BATCH);
      if (events.length === 0) return done;
      const pipeline = this.redis.pipeline();
      for (const e of events) pipeline.xadd(this.stream, 'MAXLEN', '~', this.maxLen, `${e.seq}-0`, 'id', e.id, 'event', JSON.stringify(e));
      const results = (await pipeline.exec()) ?? [];
      for (const [error] of results) {
        // Already there: published before a kill that came before the cursor moved.
        if (error && !/equal or smaller than the target stream top item/.test(error.message)) throw error;
      }
      this.o.store.setCursor(this.consumer, events.at(-1)!.seq, Date.now());
      done += events.length;
    }
  }

  private async run(): Promise<void> {
    await connected(this.redis);
    let backoffMs = 0;
    while (!this.stopped) {
      try {
        await this.publishPending();
        if (this.failing) this.logger.info({ stream: this.stream }, 'event stream reachable again; publishing');
        this.failing = false;
        backoffMs = 0;
      } catch (e) {
        if (!this.failing)
          this.logger.warn({ stream: this.stream, error: e instanceof Error ? e.message : String(e) }, 'could not publish events to the stream; retrying with backoff (polling goes on)');
        this.failing = true;
        backoffMs = Math.min(10_000, Math.max(250, backoffMs * 2));
      }
      if (this.stopped) return;
      await waitOrWake(backoffMs || 1_000, (w) => (this.wake = w));
    }
  }
}
