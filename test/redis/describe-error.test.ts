import { describe, expect, it } from 'vitest';
import { connectRedis, describeRedisError } from '../../src/redis/index.ts';
import { freePort } from '../helpers/redis.ts';

/** The error ioredis gives a command on a connection to a port where nothing listens. */
async function errorOf(options: { enableOfflineQueue: boolean; maxRetriesPerRequest: number }): Promise<unknown> {
  const redis = connectRedis(`redis://127.0.0.1:${await freePort()}`, { ...options, connectTimeout: 1_000, commandTimeout: 5_000, retryStrategy: () => 50 });
  redis.on('error', () => {});
  try {
    await redis.ping();
    throw new Error('ping answered');
  } catch (e) {
    return e;
  } finally {
    redis.disconnect();
  }
}

describe('describeRedisError (real ioredis, nothing listening)', () => {
  it('says a connection is down in plain words, not in terms of ioredis options', async () => {
    // The event stream's connections: no offline queue.
    const offline = await errorOf({ enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    expect((offline as Error).message).toMatch(/enableOfflineQueue/);
    expect(describeRedisError(offline)).toBe('not connected to Redis');
    // A queued command given up after one retry.
    const retried = await errorOf({ enableOfflineQueue: true, maxRetriesPerRequest: 1 });
    expect((retried as Error).message).toMatch(/maxRetriesPerRequest/);
    expect(describeRedisError(retried)).toBe('Redis did not answer before the connection was lost');
    expect(describeRedisError(new Error('WRONGPASS invalid username-password pair'))).toBe('WRONGPASS invalid username-password pair');
  });
});
