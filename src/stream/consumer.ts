import { type Logger, checkOptionRange, silentLogger } from '../core/index.ts';
import type { IndexbotEvent, NewEvent } from '../detect/index.ts';
import type { SnapshotKind, SnapshotValues } from '../api/index.ts';
import { type SnapshotStore, storeEventFacts, storeSnapshotRows } from '../store/index.ts';
import { type RedisConnection, connectRedis, describeRedisError } from '../redis/index.ts';
import { EVENT_STREAM, GROUP_NAME, GROUP_NAME_RULE, connected, streamConnectionOptions, waitOrWake } from './common.ts';
import { STREAM_HEARTBEAT, STREAM_MISSED, type StreamHeartbeat, type StreamMissed } from './heartbeat.ts';

export interface StreamConsumerOptions {
  /** The runner's own store: the events go into its event log, which its strategies read. */
  store: SnapshotStore;
  redisUrl: string;
  /** The consumer group, one per runner; stable across restarts (it holds the runner's place). */
  group: string;
  /** @default `indexbot:events` */
  stream?: string;
  /**
   * Who reads through the group: the runner's database (its id, first) and where it is. Two
   * runners in one group split the events between them, neither getting all: the group is
   * claimed for one database at a time, and {@link StreamConsumer.claimGroup} says who else holds it.
   */
  reader?: { databaseId: string; where: string };
  /** How long one read blocks waiting for new entries. @default 1000 */
  blockMs?: number;
  /**
   * Called with the events newly stored, after their transaction committed. The data entries
   * behind them wait for the promise it returns: a runner's strategies handle an event before
   * the store holds what the collector stored after it.
   */
  onEvents?: (events: IndexbotEvent[]) => void | Promise<void>;
  /**
   * Cursors (`strategy:<name>`) of strategies new to this database at this start. Each starts
   * at the end of the store's log, but the stream may hold events the collector detected
   * while this runner was away: those are stored with their cursors moved past them, so a
   * new strategy acts on what is detected from its start on, not on a backlog of old
   * announcements (trial 33: 101 fills, the oldest on an event 819 s old).
   */
  newConsumers?: readonly string[];
  logger?: Logger;
}

/** Runtime key: per strategy new at a start, the stream entry up to which the events stored are not given to it. */
export const STREAM_BACKLOG = 'eventStreamBacklog';

/** Consumer (`strategy:<name>`) -> the last stream entry it skips: each its own, a later start's new strategy leaves an earlier one's as it was. */
type StreamBacklog = Record<string, string>;

type Entries = [id: string, fields: string[] | null][];

/** How long a runner's claim on its group lasts unrenewed (it renews at each heartbeat, every 5 s). */
const CLAIM_MS = 30_000;

/**
 * Takes the group for `ARGV[1]` (a database's id, then who it is) unless another database
 * holds it: returns the holder's value, or nothing once taken or renewed.
 */
const CLAIM_SCRIPT = `
local held = redis.call('GET', KEYS[1])
if held and string.sub(held, 1, #ARGV[2]) ~= ARGV[2] then return held end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return false`;

const HEARTBEAT_MS = 5_000;

/**
 * Feeds a runner's local event log from the collector's stream, through a consumer group of its
 * own. An entry is acknowledged only after the transaction that stored its event committed,
 * and the local log keeps each event once by id: a runner killed between the two gets the
 * entry again from its pending list on restart (read from id 0 first) and stores nothing twice.
 * From the local log the strategy runtime delivers each event once, as in a single process.
 * The collector's snapshots come between its events and are stored with the same rows, in
 * stream order (the last entry stored is kept, so none is stored twice). Polls nothing: a
 * blocking XREADGROUP waits for the collector.
 */
export class StreamConsumer {
  private readonly redis: RedisConnection;
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
    checkOptionRange('blockMs', o.blockMs, { min: 10, max: 60_000 });
    if (!GROUP_NAME.test(o.group)) throw new TypeError(`Expected \`group\` to be ${GROUP_NAME_RULE}, got \`${o.group}\``);
    this.logger = o.logger ?? silentLogger;
    this.redis = connectRedis(o.redisUrl, streamConnectionOptions(this.blockMs + 5_000));
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
    let backlogMarked = (this.o.newConsumers ?? []).length === 0;
    while (!this.stopped) {
      try {
        await this.ensureGroup();
        if (!backlogMarked) {
          await this.markBacklog();
          backlogMarked = true;
        }
        // First what this runner was given and never acknowledged (it was killed), then new entries.
        const got = await this.read(pendingDone ? '>' : '0');
        if (got === 0) pendingDone = true;
        await this.beat();
        if (this.failing) this.logger.info({ stream: this.stream, group: this.o.group }, 'event stream reachable again');
        this.failing = false;
        backoffMs = 0;
        continue;
      } catch (e) {
        const message = describeRedisError(e);
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
  private lastBeatAt = 0;
  private lastSplitWarningAt = 0;

  /**
   * Claims the group for this runner's database, or renews the claim; resolves to who else
   * holds it (undefined when this runner does, or no `reader` was given). Throws when Redis
   * does not answer.
   */
  async claimGroup(): Promise<string | undefined> {
    const reader = this.o.reader;
    if (!reader) return undefined;
    await connected(this.redis);
    const held = await this.redis.eval(CLAIM_SCRIPT, 1, `${this.stream}:reader:${this.o.group}`, `${reader.databaseId} ${reader.where}`, reader.databaseId, CLAIM_MS);
    return typeof held === 'string' ? held.slice(held.indexOf(' ') + 1) : undefined;
  }

  /**
   * The runner's heartbeat, what `status --check` and /readyz read: a read answered (entries or
   * none, after `blockMs`), with the group's lag, recorded at most every 5 s.
   */
  private async beat(): Promise<void> {
    const now = Date.now();
    if (now - this.lastBeatAt < HEARTBEAT_MS) return;
    this.lastBeatAt = now;
    const groups = (await this.redis.xinfo('GROUPS', this.stream).catch(() => [])) as (string | number | null)[][];
    const fields = groups.map((g) => Object.fromEntries(pairs(g))).find((g) => g.name === this.o.group);
    const count = (v: unknown) => (typeof v === 'number' ? v : null);
    const beat: StreamHeartbeat = { stream: this.stream, group: this.o.group, lag: count(fields?.lag), pending: count(fields?.pending), pid: process.pid };
    this.o.store.setRuntime(STREAM_HEARTBEAT, beat, now);
    // Taken at the start; another runner started on the group while Redis was away, or after its claim lapsed.
    const other = await this.claimGroup().catch(() => undefined);
    if (other !== undefined && now - this.lastSplitWarningAt >= 60_000) {
      this.lastSplitWarningAt = now;
      this.logger.error({ group: this.o.group, other }, `another runner (${other}) reads through group ${this.o.group}: each gets part of the events; give each runner its own --group`);
    }
  }

  private async ensureGroup(): Promise<void> {
    if (this.groupReady) return;
    try {
      await this.redis.xgroup('CREATE', this.stream, this.o.group, '0', 'MKSTREAM');
    } catch (e) {
      if (!(e instanceof Error && /BUSYGROUP/.test(e.message))) throw e;
    }
    this.groupReady = true;
  }

  /**
   * Records the stream's last entry as the end of the backlog the new strategies skip, before
   * anything is read: what was published before this start was detected before it. Kept in the
   * store, so that a runner killed midway skips the rest after its restart too.
   */
  private async markBacklog(): Promise<void> {
    const [top] = await this.redis.xrevrange(this.stream, '+', '-', 'COUNT', 1);
    if (!top) return;
    const backlog: StreamBacklog = { ...this.o.store.runtime<StreamBacklog>(STREAM_BACKLOG)?.value };
    for (const consumer of this.o.newConsumers ?? []) backlog[consumer] ??= top[0];
    this.o.store.setRuntime(STREAM_BACKLOG, backlog, Date.now());
  }

  /** Stores what this store does not hold yet of `entries`, in one transaction; returns the events newly stored. */
  private store(entries: Entries): IndexbotEvent[] {
    return this.o.store.transaction(() => {
      // Entries this store already holds (stored, then killed before the acknowledgement) are only acknowledged again.
      const done = this.o.store.runtime<{ lastId?: string }>('eventStream')?.value.lastId;
      const backlog = this.o.store.runtime<StreamBacklog>(STREAM_BACKLOG)?.value;
      let backlogChanged = false;
      const added: IndexbotEvent[] = [];
      let previous = done;
      for (const [id, fields] of entries) {
        if (done !== undefined && !after(id, done)) continue;
        if (previous !== undefined) this.noteMissed(previous, id, isEvent(fields));
        previous = id;
        // Past a strategy's last skipped entry: it is given everything from here on.
        for (const [consumer, through] of Object.entries(backlog ?? {})) {
          if (!after(id, through)) continue;
          delete backlog![consumer];
          backlogChanged = true;
        }
        const entry = toEntry(fields ?? []);
        if (entry?.event) {
          const events = this.o.store.appendEvents([entry.event]);
          storeEventFacts(this.o.store, events);
          added.push(...events);
          // Detected before the new strategies started: in the same transaction, so none of them is handed it. None stored: the log held it already (the review: events[0] was read regardless, and the runner stalled).
          for (const consumer of Object.keys(backlog ?? {})) {
            for (const e of events) if (this.o.store.cursor(consumer) < e.seq) this.o.store.setCursor(consumer, e.seq, Date.now());
          }
        } else if (entry?.snapshot) storeSnapshot(this.o.store, entry.snapshot);
        // An entry trimmed from the stream, or one this runner cannot read, is acknowledged and left out.
        else this.logger.warn({ stream: this.stream, entry: id }, 'stream entry without a readable event or snapshot; skipped');
      }
      if (backlogChanged) {
        if (Object.keys(backlog!).length === 0) this.o.store.deleteRuntime(STREAM_BACKLOG);
        else this.o.store.setRuntime(STREAM_BACKLOG, backlog, Date.now());
      }
      this.o.store.setRuntime('eventStream', { stream: this.stream, group: this.o.group, lastId: entries.at(-1)![0] }, Date.now());
      return added;
    });
  }

  /**
   * Entry ids follow the collector's event seqs (`<seq>-0`, a snapshot `<seq before it>-<id>`):
   * an entry past the next seq means the stream lost the events between before this runner
   * read them (Redis restarted empty, or trimmed them while it was away). Nothing can bring
   * them back here; it is said loudly and counted where status and the metrics read it.
   */
  private noteMissed(previous: string, id: string, event: boolean): void {
    const from = Number(previous.split('-')[0]) + 1;
    const next = Number(id.split('-')[0]);
    const to = event ? next - 1 : next;
    if (to < from) return;
    const now = Date.now();
    const missed: StreamMissed = { events: (this.o.store.runtime<StreamMissed>(STREAM_MISSED)?.value.events ?? 0) + (to - from + 1), last: { from, to, at: now } };
    this.o.store.setRuntime(STREAM_MISSED, missed, now);
    this.logger.error(
      { stream: this.stream, group: this.o.group, missedFrom: from, missedTo: to },
      `the event stream no longer holds the collector's events ${from}..${to}, which this runner had not read (Redis lost them, or trimmed them while it was away): its strategies will not see them`,
    );
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
    // One transaction per event with the data entries before it: when an event is handed on,
    // the store holds the data it was detected on and nothing the collector stored after it.
    for (let start = 0; start < entries.length; ) {
      let end = start;
      while (end < entries.length - 1 && !isEvent(entries[end]![1])) end++;
      const stored = this.store(entries.slice(start, end + 1));
      // Committed: the strategies may go on while the acknowledgement travels.
      if (stored.length > 0) await this.o.onEvents?.(stored);
      start = end + 1;
    }
    await this.redis.xack(this.stream, this.o.group, ...entries.map(([id]) => id));
    return entries.length;
  }
}

/** A snapshot as the collector stored it: the same rows, dated as the collector dated them. */
interface PublishedSnapshot {
  endpoint: SnapshotKind;
  indexId: string | null;
  fetchedAt: number;
  asOf: number | null;
  hash: string;
  raw: string;
}

function storeSnapshot(store: SnapshotStore, s: PublishedSnapshot): void {
  const id = store.insertSnapshot({ endpoint: s.endpoint, indexId: s.indexId, fetchedAt: s.fetchedAt, asOf: s.asOf, hash: s.hash, raw: s.raw, status: 'accepted' });
  // The collector validated it before storing it as accepted; the lenient schemas pass records through as they are.
  storeSnapshotRows(store, s.endpoint, JSON.parse(s.raw) as SnapshotValues[SnapshotKind], id, s.fetchedAt);
}

/** Whether stream id `a` comes after `b` (ids are `<ms>-<seq>`, compared as numbers). */
function after(a: string, b: string): boolean {
  const [a1, a2] = a.split('-').map(BigInt) as [bigint, bigint];
  const [b1, b2] = b.split('-').map(BigInt) as [bigint, bigint];
  return a1 > b1 || (a1 === b1 && a2 > b2);
}

const isEvent = (fields: string[] | null) => fields?.[0] === 'id' || fields?.[0] === 'event';

const SNAPSHOT_KINDS: readonly string[] = ['composition', 'performance', 'rebalancing', 'indexes', 'tokens'] satisfies SnapshotKind[];

/** One entry's event (without the collector's `seq`: the runner's log numbers its own) or snapshot. */
function toEntry(fields: string[]): { event?: NewEvent; snapshot?: PublishedSnapshot } | undefined {
  const field = (name: string) => {
    const i = fields.indexOf(name);
    return i >= 0 && i % 2 === 0 ? fields[i + 1] : undefined;
  };
  try {
    const eventText = field('event');
    if (eventText !== undefined) {
      const { seq: _seq, ...event } = JSON.parse(eventText) as IndexbotEvent;
      return typeof event.id === 'string' && typeof event.type === 'string' ? { event: event as NewEvent } : undefined;
    }
    const snapshotText = field('snapshot');
    if (snapshotText === undefined) return undefined;
    const snapshot = JSON.parse(snapshotText) as PublishedSnapshot;
    return SNAPSHOT_KINDS.includes(snapshot.endpoint) && typeof snapshot.raw === 'string' && Number.isFinite(snapshot.fetchedAt) ? { snapshot } : undefined;
  } catch {
    return undefined;
  }
}

/** [k1, v1, k2, v2, …] as [k, v] pairs. */
function pairs<T>(flat: T[]): [T, T][] {
  return Array.from({ length: Math.floor(flat.length / 2) }, (_, i) => [flat[2 * i]!, flat[2 * i + 1]!]);
}
