import { IndexbotError, type Logger, checkOptionRange, silentLogger } from '../core/index.ts';
import type { SnapshotStore } from '../store/index.ts';
import { type RedisConnection, connectRedis, describeRedisError } from '../redis/index.ts';
import { EVENT_STREAM, PUBLISH_BATCH, connected, publishedCursor, streamConnectionOptions, waitOrWake } from './common.ts';

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
 * the event log's own store (like any other consumer of it), and between the events every
 * accepted snapshot, where the collector stored it: a runner's store then holds the same
 * compositions, performance and prices, and sees them in the same order. The stream entry's
 * id is the event's `seq` (`<seq>-0`; a snapshot's `<seq before it>-<snapshot id>`), so Redis
 * itself refuses a second copy: a collector killed after XADD and before moving its cursors
 * publishes the same entries again on restart, Redis answers "equal or smaller", and that
 * counts as published. Redis down: it logs once, retries with
 * backoff, and the collector goes on polling (its log is the source of truth).
 */
export class StreamPublisher {
  private readonly redis: RedisConnection;
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
    this.consumer = publishedCursor(this.stream);
    this.maxLen = o.maxLen ?? 100_000;
    checkOptionRange('maxLen', o.maxLen, { min: 1_000, max: 100_000_000 });
    this.logger = o.logger ?? silentLogger;
    this.redis = connectRedis(o.redisUrl, streamConnectionOptions(2_000));
    this.redis.on('error', () => {});
  }

  /**
   * Publishes what is pending once, before `start`: a stream another database wrote throws
   * (StreamAheadError), so a collector stops at its start instead of publishing nothing. Redis
   * unreachable is left to `start`'s retries.
   */
  async checkStream(): Promise<void> {
    await connected(this.redis);
    try {
      await this.publishPending();
    } catch (e) {
      if (e instanceof StreamAheadError) throw e;
    }
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

  /** Publishes everything after the cursors; returns how many entries it went through. */
  async publishPending(): Promise<number> {
    let done = 0;
    for (;;) {
      const batch = nextBatch(this.o.store, this.o.store.cursor(this.consumer), this.snapshotCursor());
      if (batch.length === 0) return done;
      const pipeline = this.redis.pipeline();
      for (const entry of batch) pipeline.xadd(this.stream, 'MAXLEN', '~', this.maxLen, entry.id, ...entry.fields);
      const results = (await pipeline.exec()) ?? [];
      let refused = false;
      for (const [error] of results) {
        if (!error) continue;
        if (!/equal or smaller than the target stream top item/.test(error.message)) throw error;
        refused = true;
      }
      // Already there: published before a kill that came before the cursor moved. Then the
      // stream ends at an event this database holds; past it, another database wrote it.
      if (refused) await this.refuseForeignStream();
      const lastEvent = batch.findLast((e) => e.kind === 'event');
      const lastSnapshot = batch.findLast((e) => e.kind === 'snapshot');
      this.o.store.transaction(() => {
        if (lastEvent) this.o.store.setCursor(this.consumer, lastEvent.position, Date.now());
        if (lastSnapshot) this.o.store.setRuntime(this.snapshotKey, lastSnapshot.position, Date.now());
      });
      done += batch.length;
    }
  }

  /**
   * Throws when the stream holds entries past this database's events: a collector on a new (or another)
   * database numbers its events from 1 again, and Redis would refuse every one as a copy,
   * silently, until its numbers passed the old collector's.
   */
  private async refuseForeignStream(): Promise<void> {
    const [top] = await this.redis.xrevrange(this.stream, '+', '-', 'COUNT', 1);
    if (!top) return;
    // The cursor too: retention may have deleted every event this database published.
    if (Number(top[0].split('-')[0]) <= Math.max(this.o.store.lastEventSeq(), this.o.store.cursor(this.consumer))) return;
    throw new StreamAheadError(
      `the event stream ${this.stream} holds entries up to ${top[0]}, past this database's events (its newest is seq ${this.o.store.lastEventSeq()}): another collector's database wrote it, and Redis refuses these events as copies. Run the collector on that database, or, once every runner has read the stream, delete it (redis-cli DEL ${this.stream}) and start the runners on new databases`,
    );
  }

  /** Kept apart from the event cursors: retention reads those as event seqs. */
  private get snapshotKey(): string {
    return `${this.consumer}:snapshots`;
  }

  private snapshotCursor(): number {
    return this.o.store.runtime<number>(this.snapshotKey)?.value ?? 0;
  }

  private async run(): Promise<void> {
    await connected(this.redis);
    let backoffMs = 0;
    while (!this.stopped) {
      try {
        // Nothing to publish: a ping, so that Redis going away is said when it goes, not at the next event (trial 24: the runner said it 16 s before the collector).
        if ((await this.publishPending()) === 0) await this.redis.ping();
        if (this.failing) this.logger.info({ stream: this.stream }, 'event stream reachable again; publishing');
        this.failing = false;
        backoffMs = 0;
      } catch (e) {
        // Not a passing outage: said at every try, loudly, while events go unpublished.
        if (e instanceof StreamAheadError) this.logger.error({ stream: this.stream, error: e.message }, 'events are not published to the stream');
        else if (!this.failing) this.logger.warn({ stream: this.stream, error: describeRedisError(e) }, 'could not publish events to the stream; retrying with backoff (polling goes on)');
        this.failing = true;
        backoffMs = e instanceof StreamAheadError ? 10_000 : Math.min(10_000, Math.max(250, backoffMs * 2));
      }
      if (this.stopped) return;
      await waitOrWake(backoffMs || 1_000, (w) => (this.wake = w));
    }
  }
}

interface Entry {
  kind: 'event' | 'snapshot';
  /** The event's seq, or the snapshot's id. */
  position: number;
  /** The stream id: `<seq>-0` for an event, `<afterSeq>-<snapshot id>` for a snapshot stored after event `afterSeq`. */
  id: string;
  major: number;
  minor: number;
  fields: string[];
}

/**
 * The next entries in the collector's store order: each snapshot right after the last event
 * stored before it, so a runner stores the data an event was detected on before the event,
 * and never data the collector stored after it. Of two full batches only the part that no
 * unread row can precede is taken.
 */
function nextBatch(store: SnapshotStore, eventCursor: number, snapshotCursor: number): Entry[] {
  const events = store.eventsAfter(eventCursor, PUBLISH_BATCH);
  const snapshots = store.acceptedSnapshotsAfter(snapshotCursor, PUBLISH_BATCH);
  const entries: Entry[] = [
    ...events.map((e): Entry => ({ kind: 'event', position: e.seq, id: `${e.seq}-0`, major: e.seq, minor: 0, fields: ['id', e.id, 'event', JSON.stringify(e)] })),
    ...snapshots.map(
      (s): Entry => ({
        kind: 'snapshot',
        position: s.id,
        id: `${s.afterSeq}-${s.id}`,
        major: s.afterSeq,
        minor: s.id,
        fields: ['snapshot', JSON.stringify({ endpoint: s.endpoint, indexId: s.indexId, fetchedAt: s.fetchedAt, asOf: s.asOf, hash: s.hash, raw: s.raw })],
      }),
    ),
  ].sort((a, b) => a.major - b.major || a.minor - b.minor);
  let bound = { major: Number.POSITIVE_INFINITY, minor: 0 };
  const below = (a: { major: number; minor: number }, b: { major: number; minor: number }) => a.major < b.major || (a.major === b.major && a.minor <= b.minor);
  // A full batch may have more rows behind it: nothing may go out past its last row.
  if (events.length === PUBLISH_BATCH) bound = { major: events.at(-1)!.seq, minor: Number.POSITIVE_INFINITY };
  if (snapshots.length === PUBLISH_BATCH) {
    const last = { major: snapshots.at(-1)!.afterSeq, minor: snapshots.at(-1)!.id };
    if (below(last, bound)) bound = last;
  }
  return entries.filter((e) => below(e, bound));
}

/** Events in a collector's log after the last one it published: seqs have no gaps, so the difference counts them. */
export function unpublishedEvents(store: SnapshotStore, stream?: string): number {
  return Math.max(0, store.lastEventSeq() - store.cursor(publishedCursor(stream)));
}

/** The stream was written by another database's collector: this one's events would be refused as copies. */
export class StreamAheadError extends IndexbotError {
  constructor(message: string) {
    super(message, 'STREAM_AHEAD', 'operational');
  }
}
