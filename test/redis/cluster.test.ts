import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRedis } from '../../src/cli/redis.ts';
import { resolveRedisUrl } from '../../src/config/index.ts';
import { caught } from '../helpers/caught.ts';
import type { NewEvent } from '../../src/detect/index.ts';
import { type LocalView, RedisBudgets, budgetKeys, credentialDigest } from '../../src/ratelimit/index.ts';
import { parseClusterUrl, redactRedisUrl } from '../../src/redis/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { StreamConsumer, StreamPublisher } from '../../src/stream/index.ts';
import { waitFor } from '../helpers/daemon.ts';
import { type TestRedisCluster, startRedisCluster } from '../helpers/redis.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

let cluster: TestRedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster(3);
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

/** Which node's port serves `key`'s slot. */
async function portOf(key: string): Promise<number> {
  const probe = new Redis(cluster.nodes[0]!.port, '127.0.0.1');
  try {
    const slot = (await probe.call('CLUSTER', 'KEYSLOT', key)) as number;
    const ranges = (await probe.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    return ranges.find(([from, to]) => slot >= from && slot <= to)![2][1];
  } finally {
    probe.disconnect();
  }
}

const view: LocalView = { limit: 10, burst: 5, windowMs: 60_000, remaining: undefined, resetInMs: undefined };

describe('on a Redis Cluster (three real redis-server masters)', () => {
  it('doctor checks every master', async () => {
    const check = await checkRedis(cluster.url);
    expect(check.ok).toBe(true);
    expect(check.detail).toMatch(/^redis-cluster:\/\/127\.0\.0\.1:\d+: Redis Cluster of 3 master\(s\), lowest version 7\.\d+\.\d+, maxmemory-policy noeviction$/);
  });

  it('processes on one credential draw from one bucket whichever master holds it; both keys of a budget share a slot', async () => {
    const digests = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'].map((k) => credentialDigest(`cluster-${k}`));
    const homes = new Set<number>();
    const [a, b] = [new RedisBudgets({ url: cluster.url, processId: 'a' }), new RedisBudgets({ url: cluster.url, processId: 'b' })];
    try {
      expect(await a.ready()).toBe(true);
      expect(await b.ready()).toBe(true);
      for (const digest of digests) {
        const [bucket, processes] = budgetKeys(digest);
        const home = await portOf(bucket);
        expect(await portOf(processes)).toBe(home);
        homes.add(home);
        const [fromA, fromB] = [a.budget(digest, 'key:a'), b.budget(digest, 'key:b')];
        const takes = [];
        for (let i = 0; i < 4; i++) takes.push(await fromA.take('normal', view), await fromB.take('normal', view));
        // Burst 5 shared by both: five go at once, three wait for a refill (not a local 1/N share).
        expect(takes.filter((t) => t.waitMs === 0)).toHaveLength(5);
        expect(fromA.state().mode).toBe('shared');
        expect(fromB.state().mode).toBe('shared');
      }
      // The six budgets did not all land on the node named in the URL.
      expect(homes.size).toBeGreaterThan(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a collector publishes to a stream on another master and a runner stores each event once', async () => {
    let stream = 'indexbot:events';
    for (let i = 0; (await portOf(stream)) === cluster.nodes[0]!.port; i++) stream = `indexbot:events:${i}`;
    const event = (n: number): NewEvent =>
      ({ id: `rebalance.announced:sindex:rb_${n}`, type: 'rebalance.announced', indexId: 'sindex', occurredAt: n, detectedAt: n, payload: { rebalanceId: `rb_${n}` } }) as unknown as NewEvent;
    const collector = SnapshotStore.open(tempDbPath());
    const runner = SnapshotStore.open(tempDbPath());
    collector.appendEvents([1, 2, 3].map(event));
    const publisher = new StreamPublisher({ store: collector, redisUrl: cluster.url, stream });
    const consumer = new StreamConsumer({ store: runner, redisUrl: cluster.url, stream, group: 'runner-1', blockMs: 100 });
    try {
      publisher.start();
      consumer.start();
      await waitFor('the runner to store three events', () => runner.lastEventSeq() === 3, 20_000);
      collector.appendEvents([4].map(event));
      publisher.notify();
      await waitFor('the fourth', () => runner.lastEventSeq() === 4, 20_000);
      expect(runner.eventsAfter(0).map((e) => e.id)).toEqual([1, 2, 3, 4].map((n) => event(n).id));
    } finally {
      await publisher.stop();
      await consumer.stop();
      collector.close();
      runner.close();
    }
  });
});

describe('cluster URLs', () => {
  it('are read as startup nodes with their credentials, named in config errors, and logged without the password', () => {
    expect(parseClusterUrl('rediss-cluster://ops:s%40cret@10.0.0.1:7000,[::1]:7001')).toEqual({
      tls: true,
      username: 'ops',
      password: 's@cret',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
      ],
    });
    expect(parseClusterUrl('redis://127.0.0.1:6379')).toBeUndefined();
    expect(() => parseClusterUrl('redis-cluster://a:7000,b')).toThrow('expected host:port for each cluster node, got "b"');
    expect(() => parseClusterUrl('redis-cluster://a:7000/2')).toThrow(/no database/);
    expect(resolveRedisUrl('redis-cluster://a:7000,b:7001', 'indexbot.json', {})).toBe('redis-cluster://a:7000,b:7001');
    expect(() => resolveRedisUrl('redis-cluster://a:7000,b', 'indexbot.json', {})).toThrow(/^indexbot\.json: rateLimit\.redis .*expected a redis:\/\/, rediss:\/\/, redis-cluster:\/\/host:port/);
    // A bad port is named as such (it was "not a URL"), and a password in the URL is never quoted.
    for (const url of ['redis://127.0.0.1:notaport', 'redis://ops:hunter2@127.0.0.1:99999', 'rediss://[::1]:6379x']) {
      const e = caught<Error>(() => resolveRedisUrl(url, 'indexbot.json', {}));
      expect(e.message, url).toMatch(/\(its port is not a number from 1 to 65535\)$/);
      expect(e.message).not.toContain('hunter2');
    }
    expect(() => resolveRedisUrl('redis//x', 'indexbot.json', {})).toThrow(/\(not a URL\)$/);
    expect(redactRedisUrl('redis-cluster://:hunter2@a:7000,b:7001')).toBe('redis-cluster://:***@a:7000,b:7001');
    expect(redactRedisUrl('rediss-cluster://ops:hunter2@a:7000')).toBe('rediss-cluster://***:***@a:7000');
    expect(redactRedisUrl('redis-cluster://a:7000')).toBe('redis-cluster://a:7000');
  });
});
