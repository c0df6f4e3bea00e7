import { Redis } from 'ioredis';
import { type Logger, silentLogger } from '../core/index.ts';
import type { IndexbotEvent, NewEvent } from '../detect/index.ts';
import type { SnapshotStore } from '../store/index.ts';
import { EVENT_STREAM, connected, streamConnectionOptions, waitOrWake } from './common.ts';

export interface StreamConsumerOptions {
  /** The runner's own store: the events go into its event log, which its strategies read. */
  store: SnapshotStore;
  redisUrl: string;
  /** The consumer group, one per runner; stable across restarts (it holds the runner's place). */
  group: string;
  /** @default `indexbot:events` */
  stream?: string;
  /** How long one read blocks waiting for new entries. @default 1000 */
  blockMs?: number;
  /** Called with the events newly stored, after their transaction committed. */
  onEvents?: (events: IndexbotEvent[]) => void;
  logger?: Logger;
}

type Entries = [id: string, fields: string[] | null][];

/**
 * Feeds a runner's local event log from the collector's stream, through a consumer group of its
 * own. An entry is acknowledged only after the transaction that stored its event committed,
 * and the local log keeps each event once by id: a runner killed between the two gets the
 * entry again from its pending list on restart (read from id 0 first) and stores nothing twice.
 * From the local log the strategy runtime delivers each event once, as in a single process.
 * Polls nothing: a blocking XREADGROUP waits for the collector.
 */
export class StreamConsumer {
  private readonly redis: Redis;
  private readonly stream: string;
  private readonly blockMs: number;
  private readonly logger: Logger;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private failing = false;

  constructor(private readonly o: StreamConsumerOptions) {
    this.stream = o.stream ?? EVENT_STREAM;
    this.blockMs = o.blockMs ?? 1_000;
    if (!Number.isInteger(this.blockMs) || this.blockMs < 10 || this.blockMs > 60_000) {
      throw new TypeError(`Expected \`blockMs\` to be an integer from 10 to 60000, got \`${String(o.blockMs)}\``);
    }
    if (!/^[\w.:-]{1,128}$/.test(o.group)) throw new TypeError(`Expected \`group\` to be 1-128 letters, digits, '.', ':', '_' or '-', got \`${o.group}\``);
    this.logger = o.logger ?? silentLogger;
    this.redis = new Redis(o.redisUrl, streamConnectionOptions(this.blockMs + 5_000));
    this.redis.on('error', () => {});
  }

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    this.redis.disconnect();
  }

  private async run(): Promise<void> {
    await connected(this.redis);
    let backoffMs = 0;
    let pendingDone = false;
    while (!this.stopped) {
      try {
        await this.ensureGroup();
        // First what this runner was given and never acknowledged (it was killed), then new entries.
        const got = await this.read(pendingDone ? '>' : '0');
        if (got === 0) pendingDone = true;
        if (this.failing) this.logger.info({ stream: this.stream, group: this.o.group }, 'event stream reachable again');
        this.failing = false;
        backoffMs = 0;
        continue;
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        // Redis restarted without its data: the group is gone; recreate it and read from the start (nothing is stored twice).
        if (/NOGROUP/.test(message)) pendingDone = false;
        if (!this.failing) this.logger.warn({ stream: this.stream, group: this.o.group, error: message }, 'could not read the event stream; retrying with backoff');
        this.failing = true;
        backoffMs = Math.min(10_000, Math.max(250, backoffMs * 2));
      }
      await waitOrWake(backoffMs, (w) => (this.wake = w));
    }
  }

  private groupReady = false;

  private async ensureGroup(): Promise<void> {
    if (this.groupReady) return;
    try {
      await this.redis.xgroup('CREATE', this.stream, this.o.group, '0', 'MKSTREAM');
    } catch (e) {
      if (!(e instanceof Error && /BUSYGROUP/.test(e.message))) throw e;
    }
    this.groupReady = true;
  }

  /** One read (pending from `0`, or new with `>`, blocking); stores and acknowledges what came. Returns the entry count. */
  private async read(from: '0' | '>'): Promise<number> {
    const args = from === '>' ? ['BLOCK', this.blockMs] : [];
    let reply: [string, Entries][] | null;
    try {
      const xreadgroup = this.redis.xreadgroup as unknown as (...a: (string | number)[]) => Promise<[string, Entries][] | null>;
      reply = await xreadgroup.call(this.redis, 'GROUP', this.o.group, this.o.group, 'COUNT', 200, ...args, 'STREAMS', this.stream, from);
    } catch (e) {
      if (e instanceof Error && /NOGROUP/.test(e.message)) this.groupReady = false;
      throw e;
    }
    const entries = reply?.[0]?.[1] ?? [];
    if (entries.length === 0) return 0;
    const events: NewEvent[] = [];
    for (const [id, fields] of entries) {
      const event = toEvent(fields ?? []);
      // An entry trimmed from the stream, or one that is not an event, is acknowledged and left out.
      if (event) events.push(event);
      else this.logger.warn({ stream: this.stream, entry: id }, 'stream entry without a readable event; skipped');
    }
    const stored = this.o.store.transaction(() => {
      const added = this.o.store.appendEvents(events);
      this.o.store.setRuntime('eventStream', { stream: this.stream, group: this.o.group, lastId: entries.at(-1)![0] }, Date.now());
      return added;
    });
    // Committed: the strategies may go on while the acknowledgement travels.
    if (stored.length > 0) this.o.onEvents?.(stored);
    await this.redis.xack(this.stream, this.o.group, ...entries.map(([id]) => id));
    return entries.length;
  }
}

/** The event of one entry, without the collector's `seq` (the runner's log numbers its own). */
function toEvent(fields: string[]): NewEvent | undefined {
  const i = fields.indexOf('event');
  if (i < 0 || i % 2 !== 0) return undefined;
  try {
    const { seq: _seq, ...event } = JSON.parse(fields[i + 1]!) as IndexbotEvent;
    return typeof event.id === 'string' && typeof event.type === 'string' ? (event as NewEvent) : undefined;
  } catch {
    return undefined;
  }
}
