import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewEvent } from '../../src/detect/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { StreamConsumer, StreamPublisher } from '../../src/stream/index.ts';
import { waitFor } from '../helpers/daemon.ts';
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

  it('a runner takes back what it was given and never acknowledged, stores each event once, and acknowledges after the commit', async () => {
    const stream = 'test:consume';
    for (const n of [1, 2, 3]) await admin.xadd(stream, `${n}-0`, 'id', event(n).id, 'event', JSON.stringify({ ...event(n), seq: n }));
    await admin.xgroup('CREATE', stream, 'runner-a', '0', 'MKSTREAM');
    // A runner read all three and was killed before acknowledging; it had stored the first.
    await admin.xreadgroup('GROUP', 'runner-a', 'runner-a', 'COUNT', 10, 'STREAMS', stream, '>');
    const store = SnapshotStore.open(tempDbPath());
    store.appendEvents([event(1)]);
    const received: string[] = [];
    const consumer = new StreamConsumer({ store, redisUrl: redis.url, group: 'runner-a', stream, blockMs: 100, onEvents: (e) => received.push(...e.map((x) => x.id)) });
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
});
