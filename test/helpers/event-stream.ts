import type { Redis } from 'ioredis';
import { EVENT_STREAM } from '../../src/stream/index.ts';

/**
 * Publishes events `from`..`to` to the event stream in one round trip, each as a collector
 * would: entry id `<seq>-0`, the event's id and its JSON (a rebalance of `indexId`).
 */
export async function publishEvents(redis: Redis, from: number, to: number, type = 'rebalance.announced', indexId = 'sindex'): Promise<void> {
  const pipeline = redis.pipeline();
  for (let n = from; n <= to; n++) {
    const id = `${type}:${indexId}:rb_${n}`;
    pipeline.xadd(EVENT_STREAM, `${n}-0`, 'id', id, 'event', JSON.stringify({ id, seq: n, type, indexId, occurredAt: n, detectedAt: n, payload: { rebalanceId: `rb_${n}` } }));
  }
  await pipeline.exec();
}
