import { spawnSync } from 'node:child_process';
import { deflateRawSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Snapshot, SnapshotKind } from '../../src/api/index.ts';
import type { NewEvent } from '../../src/detect/index.ts';
import { ingest } from '../../src/poller/index.ts';
import { MIGRATIONS, RunLock, SnapshotStore } from '../../src/store/index.ts';
import { STREAM_HEARTBEAT, StreamConsumer, StreamPublisher } from '../../src/stream/index.ts';
import { collectStatus } from '../../src/cli/status-command.ts';
import { runCli, waitFor } from '../helpers/daemon.ts';
import { captureLogger } from '../helpers/fake-transport.ts';
import { type TestRedis, startRedis } from '../helpers/redis.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

let redis: TestRedis;
let admin: Redis;
beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
});
afterAll(async () => {
  admin?.disconnect();
  await redis?.stop();
});

const event = (n: number): NewEvent =>
  ({ id: `rebalance.announced:sindex:rb_${n}`, type: 'rebalance.announced', indexId: 'sindex', occurredAt: n, detectedAt: n, payload: { rebalanceId: `rb_${n}` } }) as unknown as NewEvent;

describe('event stream (real redis-server)', () => {
  it('the collector publishes each event once, even when its cursor did not move before a kill', async () => {
    const stream = 'test:publish';
    const store = SnapshotStore.open(tempDbPath());
    store.appendEvents([1, 2, 3].map(event));
    const publisher = new StreamPublisher({ store, redisUrl: redis.url, stream });
    try {
      await waitFor('connected', () => (publisher as unknown as { redis: Redis }).redis.status === 'ready', 5_000, 20);
      expect(await publisher.publishPending()).toBe(3);
      // As if killed after XADD, before the cursor moved: everything is offered again.
      store.setCursor(`stream:${stream}`, 0, Date.now());
      store.appendEvents([4].map(event));
      expect(await publisher.publishPending()).toBe(4);
      const entries = await admin.xrange(stream, '-', '+');
      expect(entries.map(([id]) => id)).toEqual(['1-0', '2-0', '3-0', '4-0']);
      expect(entries.map(([, f]) => f[1])).toEqual([1, 2, 3, 4].map((n) => event(n).id));
    } finally {
      await publisher.stop();
      store.close();
    }
  });

  it('a collector on a new database refuses a stream another database wrote, at its start and after, instead of publishing nothing (found by a trial)', async () => {
    const stream = 'test:foreign';
    const old = SnapshotStore.open(tempDbPath());
    old.appendEvents([1, 2, 3, 4, 5].map(event));
    const first = new StreamPublisher({ store: old, redisUrl: redis.url, stream });
    const fresh = SnapshotStore.open(tempDbPath());
    fresh.appendEvents([101, 102].map(event));
    const second = new StreamPublisher({ store: fresh, redisUrl: redis.url, stream });
    try {
      await first.checkStream();
      expect(await first.publishPending()).toBe(0);
      // Seqs 1 and 2 of the new database are below the stream's 5-0: Redis refused them as copies, and that passed for published.
      await expect(second.checkStream()).rejects.toMatchObject({
        code: 'STREAM_AHEAD',
        message: expect.stringMatching(/^the event stream test:foreign holds entries up to 5-0, past this database's events \(its newest is seq 2\)/),
      });
      await expect(second.publishPending()).rejects.toMatchObject({ code: 'STREAM_AHEAD' });
      expect(fresh.cursor(`stream:${stream}`)).toBe(0);
      expect((await admin.xrange(stream, '-', '+')).map(([, f]) => f[1])).toEqual([1, 2, 3, 4, 5].map((n) => event(n).id));
    } finally {
      await first.stop();
      await second.stop();
      old.close();
      fresh.close();
    }
  });

  it("a group is claimed for one runner's database: another database is told who holds it; the same database (restarted) takes it back (trial 29)", async () => {
    const consumerOf = (databaseId: string, where: string) =>
      new StreamConsumer({ store: SnapshotStore.open(tempDbPath()), redisUrl: redis.url, group: 'shared-group', stream: 'test:claim', blockMs: 100, reader: { databaseId, where } });
    const first = consumerOf('db-one', 'host-a:/srv/one.db');
    const second = consumerOf('db-two', 'host-b:/srv/two.db');
    const restarted = consumerOf('db-one', 'host-a:/srv/one.db');
    try {
      expect(await first.claimGroup()).toBeUndefined();
      expect(await second.claimGroup()).toBe('host-a:/srv/one.db');
      // Killed and started again on its own database: its claim is its own.
      expect(await restarted.claimGroup()).toBeUndefined();
      const ttl = await admin.pttl('test:claim:reader:shared-group');
      expect(ttl).toBeGreaterThan(20_000);
      expect(ttl).toBeLessThanOrEqual(30_000);
    } finally {
      await Promise.all([first, second, restarted].map((c) => c.stop()));
    }
  });

  it('a runner takes back what it was given and never acknowledged, stores each event once, and acknowledges after the commit', async () => {
    const stream = 'test:consume';
    for (const n of [1, 2, 3]) await admin.xadd(stream, `${n}-0`, 'id', event(n).id, 'event', JSON.stringify({ ...event(n), seq: n }));
    await admin.xgroup('CREATE', stream, 'runner-a', '0', 'MKSTREAM');
    // A runner read all three and was killed before acknowledging; it had stored the first.
    await admin.xreadgroup('GROUP', 'runner-a', 'runner-a', 'COUNT', 10, 'STREAMS', stream, '>');
    const store = SnapshotStore.open(tempDbPath());
    store.appendEvents([event(1)]);
    const received: string[] = [];
    const consumer = new StreamConsumer({
      store,
      redisUrl: redis.url,
      group: 'runner-a',
      stream,
      blockMs: 100,
      onEvents: (e) => {
        received.push(...e.map((x) => x.id));
      },
    });
    consumer.start();
    try {
      await waitFor('the pending entries stored', () => store.eventsAfter(0).length === 3, 10_000, 20);
      await admin.xadd(stream, '4-0', 'id', event(4).id, 'event', JSON.stringify({ ...event(4), seq: 4 }));
      await waitFor('the new entry stored and announced', () => store.eventsAfter(0).length === 4 && received.length === 3, 10_000, 20);
      expect(store.eventsAfter(0).map((e) => e.id)).toEqual([1, 2, 3, 4].map((n) => event(n).id));
      expect(received).toEqual([2, 3, 4].map((n) => event(n).id));
      const pendingCount = async () => ((await admin.xpending(stream, 'runner-a')) as [number, ...unknown[]])[0];
      for (let i = 0; i < 50 && (await pendingCount()) > 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(await pendingCount()).toBe(0);
    } finally {
      await consumer.stop();
      store.close();
    }
  });

  it('a strategy new to a runner’s database is not given the events the stream held from before its start; the others are, and it gets what comes after (trial 33)', async () => {
    const stream = 'test:backlog';
    // Detected while the runner was away.
    for (const n of [1, 2, 3]) await admin.xadd(stream, `${n}-0`, 'id', event(n).id, 'event', JSON.stringify({ ...event(n), seq: n }));
    const store = SnapshotStore.open(tempDbPath());
    // As the runtime starts them: the old strategy where it was, the new one at the end of the log (empty here).
    store.startCursors(
      [
        ['strategy:old', 0],
        ['strategy:late', 0],
      ],
      Date.now(),
    );
    const consumer = new StreamConsumer({ store, redisUrl: redis.url, group: 'runner-b', stream, blockMs: 100, newConsumers: ['strategy:late'] });
    consumer.start();
    try {
      await waitFor('the backlog stored', () => store.eventsAfter(0).length === 3, 10_000, 20);
      // Before: the new strategy's cursor stayed at 0, and it traded on all three.
      expect(store.cursor('strategy:late')).toBe(3);
      expect(store.cursor('strategy:old')).toBe(0);
      await admin.xadd(stream, '4-0', 'id', event(4).id, 'event', JSON.stringify({ ...event(4), seq: 4 }));
      await waitFor('the new entry stored', () => store.eventsAfter(0).length === 4, 10_000, 20);
      expect(store.eventsAfter(store.cursor('strategy:late')).map((e) => e.id)).toEqual([event(4).id]);
      expect(store.runtime('eventStreamBacklog')).toBeUndefined();
    } finally {
      await consumer.stop();
      store.close();
    }
  });

  it('each new strategy skips up to the stream entry of its own start; an event the log held already neither stalls the runner nor moves a cursor wrongly (the review)', async () => {
    const stream = 'test:backlog-restart';
    for (const n of [1, 2]) await admin.xadd(stream, `${n}-0`, 'id', event(n).id, 'event', JSON.stringify({ ...event(n), seq: n }));
    const store = SnapshotStore.open(tempDbPath());
    // Strategy a was new at a start that saw the stream end at 2, and the runner was killed before it read anything.
    store.startCursors([['strategy:a', 0]], Date.now());
    store.setRuntime('eventStreamBacklog', { 'strategy:a': '2-0' }, Date.now());
    // Event 1 is in the log already, under another entry: storing it again adds nothing.
    store.appendEvents([event(1)]);
    // Published while the runner was down: 3 and 4. Then it starts again, with strategy b new.
    for (const n of [3, 4]) await admin.xadd(stream, `${n}-0`, 'id', event(n).id, 'event', JSON.stringify({ ...event(n), seq: n }));
    store.startCursors([['strategy:b', store.lastEventSeq()]], Date.now());
    const consumer = new StreamConsumer({ store, redisUrl: redis.url, group: 'runner-d', stream, blockMs: 100, newConsumers: ['strategy:b'] });
    consumer.start();
    try {
      await waitFor('every entry gone through', () => store.runtime<{ lastId: string }>('eventStream')?.value.lastId === '4-0', 10_000, 20);
    } finally {
      await consumer.stop();
    }
    const ids = (after: number) => store.eventsAfter(after).map((e) => e.id);
    // a skips what was there at its own start (1, 2) and is given 3 and 4; b, new now, skips all four.
    expect(ids(store.cursor('strategy:a'))).toEqual([event(3).id, event(4).id]);
    expect(ids(store.cursor('strategy:b'))).toEqual([]);
    store.close();
  });

  it('a runner behind when the stream lost entries says which events it never got, in its log, status and the store (trial 33: silent)', async () => {
    const stream = 'test:lost';
    for (const n of [1, 2]) await admin.xadd(stream, `${n}-0`, 'id', event(n).id, 'event', JSON.stringify({ ...event(n), seq: n }));
    const store = SnapshotStore.open(tempDbPath());
    const { logger, lines } = captureLogger();
    const options = { store, redisUrl: redis.url, group: 'runner-c', stream, blockMs: 100, logger };
    let consumer = new StreamConsumer(options);
    consumer.start();
    await waitFor('the first two stored', () => store.eventsAfter(0).length === 2, 10_000, 20);
    await consumer.stop();
    // Away: 3..5 published, then Redis restarted empty (the stream and the group gone), and the collector published on from 6, a snapshot stored after 6 first.
    await admin.del(stream);
    await admin.xadd(stream, '6-9', 'snapshot', '{}');
    await admin.xadd(stream, '7-0', 'id', event(7).id, 'event', JSON.stringify({ ...event(7), seq: 7 }));
    consumer = new StreamConsumer(options);
    consumer.start();
    try {
      await waitFor('the event after the hole stored', () => store.eventsAfter(0).length === 3, 10_000, 20);
    } finally {
      await consumer.stop();
    }
    expect(lines.filter((l) => l.includes("no longer holds the collector's events 3..6"))).toHaveLength(1);
    const status = collectStatus(store, Date.now());
    expect(status.eventStream?.missed).toMatchObject({ events: 4, lastFrom: 3, lastTo: 6 });
    store.close();
  });
});

const composition = (asOf: string, targetA: number, priceA: number) => ({
  index_id: 'sindex',
  as_of: asOf,
  rebalance_id: `rb_${targetA}`,
  constituents: [
    { address: 'A', symbol: 'AAA', weight: targetA, target_weight: targetA, price_usd: priceA },
    { address: 'B', symbol: 'BBB', weight: 1 - targetA, target_weight: 1 - targetA, price_usd: 2 },
  ],
});
const snap = <K extends SnapshotKind>(kind: K, value: unknown): Snapshot<K> => ({ kind, raw: value, requestId: 'r', value: value as never });
const performance = (asOf: string, nav: number) => ({ index_id: 'sindex', as_of: asOf, nav, returns: { '24h': 0.01 } });

describe('market data on the event stream (real redis-server)', () => {
  it('each snapshot goes out after the events stored before it and before its own, even past full batches', async () => {
    const stream = 'test:order';
    const store = SnapshotStore.open(tempDbPath());
    // More snapshots than a batch before any event: a publisher that merged two full batches blindly would send later ones behind events and Redis would drop them.
    const snapshotInput = (n: number) => ({ endpoint: 'tokens', indexId: null, fetchedAt: n, asOf: null, hash: `h${n}`, raw: '[]', status: 'accepted' as const });
    store.transaction(() => {
      for (let n = 1; n <= 250; n++) store.insertSnapshot(snapshotInput(n));
      store.appendEvents(Array.from({ length: 250 }, (_, i) => event(i + 1)));
      store.insertSnapshot({ ...snapshotInput(251), status: 'rejected', error: 'bad' });
      store.insertSnapshot(snapshotInput(252));
    });
    const publisher = new StreamPublisher({ store, redisUrl: redis.url, stream });
    try {
      await waitFor('connected', () => (publisher as unknown as { redis: Redis }).redis.status === 'ready', 5_000, 20);
      expect(await publisher.publishPending()).toBe(501);
      const ids = (await admin.xrange(stream, '-', '+')).map(([id]) => id);
      expect(ids).toEqual([...Array.from({ length: 250 }, (_, i) => `0-${i + 1}`), ...Array.from({ length: 250 }, (_, i) => `${i + 1}-0`), '250-252']);
      // Killed before the cursors moved: offered again, refused by Redis, nothing sent twice.
      store.setCursor(`stream:${stream}`, 0, Date.now());
      store.setRuntime(`stream:${stream}:snapshots`, 0, Date.now());
      expect(await publisher.publishPending()).toBe(501);
      expect(await admin.xlen(stream)).toBe(501);
    } finally {
      await publisher.stop();
      store.close();
    }
  });

  it('a cache from before the stream carried snapshots publishes its latest snapshot per endpoint and index, after its events', async () => {
    const stream = 'test:upgrade';
    const path = tempDbPath();
    const old = new Database(path);
    for (const m of MIGRATIONS.filter((m) => m.version < 9)) old.exec(m.sql);
    old.pragma('user_version = 8');
    const insert = old.prepare("INSERT INTO snapshots (endpoint, index_id, fetched_at, as_of, hash, raw, status) VALUES (?, ?, 1, NULL, ?, ?, 'accepted')");
    const raw = deflateRawSync('[]');
    for (const [endpoint, indexId, hash] of [
      ['tokens', null, 'a'],
      ['tokens', null, 'b'],
      ['rebalancing', 'sindex', 'c'],
      ['rebalancing', 'tindex', 'd'],
      ['rebalancing', 'sindex', 'e'],
    ])
      insert.run(endpoint, indexId, hash, raw);
    old.prepare("INSERT INTO events (id, type, index_id, occurred_at, detected_at, payload) VALUES ('e1', 'rebalance.announced', 'sindex', 1, 2, '{}')").run();
    old.close();
    const store = SnapshotStore.open(path);
    const publisher = new StreamPublisher({ store, redisUrl: redis.url, stream });
    try {
      await waitFor('connected', () => (publisher as unknown as { redis: Redis }).redis.status === 'ready', 5_000, 20);
      expect(await publisher.publishPending()).toBe(4);
      expect((await admin.xrange(stream, '-', '+')).map(([id]) => id)).toEqual(['1-0', '1-2', '1-4', '1-5']);
    } finally {
      await publisher.stop();
      store.close();
    }
  });

  it('a runner’s store answers ctx.data and price queries as the collector’s, and holds an event’s data when the event arrives', async () => {
    const stream = 'test:market';
    const collector = SnapshotStore.open(tempDbPath());
    const runner = SnapshotStore.open(tempDbPath());
    const t0 = Date.parse('2026-11-22T10:00:00.000Z');
    ingest(collector, snap('tokens', [{ address: 'C', symbol: 'CCC', price_usd: 7, decimals: 6 }]), undefined, t0, 0.02);
    ingest(collector, snap('composition', composition('2026-11-22T10:00:00.000Z', 0.5, 1)), 'sindex', t0 + 1, 0.02);
    ingest(collector, snap('performance', performance('2026-11-22T10:00:00.000Z', 100)), 'sindex', t0 + 2, 0.02);
    // New targets: a rebalance.completed event, detected on this snapshot.
    const rebalance = ingest(collector, snap('composition', composition('2026-11-22T10:05:00.000Z', 0.6, 1.5)), 'sindex', t0 + 3, 0.02).events;
    expect(rebalance.map((e) => e.type)).toContain('rebalance.completed');
    ingest(collector, snap('performance', performance('2026-11-22T10:05:00.000Z', 104)), 'sindex', t0 + 4, 0.02);
    // Data stored after the event.
    ingest(collector, snap('composition', composition('2026-11-22T10:10:00.000Z', 0.6, 1.8)), 'sindex', t0 + 5, 0.02);
    const publisher = new StreamPublisher({ store: collector, redisUrl: redis.url, stream });
    const atEvent: { id: string; priceA: number | undefined }[] = [];
    const consumer = new StreamConsumer({
      store: runner,
      redisUrl: redis.url,
      group: 'runner-m',
      stream,
      blockMs: 100,
      onEvents: (events) => {
        atEvent.push(...events.map((e) => ({ id: e.id, priceA: runner.tokenPriceAt('A', Number.MAX_SAFE_INTEGER)?.priceUsd })));
      },
    });
    try {
      await waitFor('connected', () => (publisher as unknown as { redis: Redis }).redis.status === 'ready', 5_000, 20);
      await publisher.publishPending();
      consumer.start();
      await waitFor(
        'everything stored',
        () => runner.eventsAfter(0).length === collector.eventsAfter(0).length && runner.compositionAt('sindex')?.asOf === Date.parse('2026-11-22T10:10:00.000Z'),
        10_000,
        20,
      );
      for (const at of [t0 + 1, Date.parse('2026-11-22T10:05:00.000Z'), Date.parse('2026-11-22T10:07:00.000Z'), Number.MAX_SAFE_INTEGER]) {
        expect(runner.compositionAt('sindex', at)).toEqual(collector.compositionAt('sindex', at));
        expect(runner.navAt('sindex', at)).toEqual(collector.navAt('sindex', at));
        for (const token of ['A', 'B', 'C']) expect(runner.tokenPriceAt(token, at)).toEqual(collector.tokenPriceAt(token, at));
        expect(runner.rebalancesAt('sindex', at)).toEqual(collector.rebalancesAt('sindex', at));
      }
      expect(runner.eventsAfter(0).map(({ seq: _, ...e }) => e)).toEqual(collector.eventsAfter(0).map(({ seq: _, ...e }) => e));
      // When the rebalance event was handed on, the runner held the snapshot it was detected on and not the later one.
      expect(atEvent.find((e) => e.id === rebalance[0]!.id)?.priceA).toBe(1.5);
    } finally {
      await consumer.stop();
      await publisher.stop();
      collector.close();
      runner.close();
    }
  });
});

describe('a runner can be watched', () => {
  it('its answered reads are its heartbeat: status shows the stream, group and lag, and status --check passes while it reads', { timeout: 30_000 }, async () => {
    const stream = 'test:heartbeat';
    for (const n of [1, 2, 3]) await admin.xadd(stream, '*', 'id', event(n).id, 'event', JSON.stringify({ ...event(n), seq: n }));
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    const consumer = new StreamConsumer({ store, redisUrl: redis.url, stream, group: 'watched', blockMs: 50 });
    consumer.start();
    try {
      const beat = await waitFor('a heartbeat', () => collectStatus(store, Date.now()).eventStream ?? undefined, 10_000, 20);
      // The first read answered is of what this runner was given before (none): the three entries are still to come.
      expect(beat).toMatchObject({ stream, group: 'watched', lag: 3, pending: 0 });
      expect(collectStatus(store, Date.now()).heartbeat).toMatchObject({ lastStreamReadAt: expect.any(String) });
      // Stopped, so that no later heartbeat changes what the commands read; the last one stays fresh for minutes.
      await consumer.stop();
      const status = await runCli(['status', '--db', db]);
      expect(status.stdout).toContain(`Event stream (a runner)\n  ${stream}  group watched  lag 3  pending 0  last read`);
      expect(status.stdout).not.toContain('Rate gates');
      // As a runner holds its database while it runs: this process, here.
      const lock = RunLock.acquire(db);
      const check = await runCli(['status', '--check', '--db', db]);
      lock.release();
      expect(check.stdout).toMatch(/^ok: last event-stream read \d+s ago\n$/);
      expect(check.status).toBe(0);
      expect(status.stdout).not.toContain('no longer running');
      // A runner that stopped: its last lag stays, and status says it is the last.
      const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
      store.setRuntime(STREAM_HEARTBEAT, { stream, group: 'watched', lag: 3, pending: 0, pid: gone }, Date.now());
      expect((await runCli(['status', '--db', db])).stdout).toMatch(
        new RegExp(`lag 3 {2}pending 0 {2}last read \\d+s ago\\n {2}its runner \\(pid ${gone}\\) is no longer running: lag and pending are as of its last read\\n`),
      );
    } finally {
      await consumer.stop();
      store.close();
    }
  });
});
