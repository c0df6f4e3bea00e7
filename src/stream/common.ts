import { type ConnectionOptions, type RedisConnection, reconnectWithinASecond } from '../redis/index.ts';

/** The stream the collector publishes to, unless told otherwise. */
export const EVENT_STREAM = 'indexbot:events';
export const PUBLISH_BATCH = 200;

/** The event log cursor of the collector's publisher: the last event seq it published to `stream`. */
export const publishedCursor = (stream: string = EVENT_STREAM) => `stream:${stream}`;

/** What a consumer group may be called: a Redis key part a person can read in `XINFO GROUPS`. */
export const GROUP_NAME = /^[\w.:-]{1,128}$/;
export const GROUP_NAME_RULE = "1-128 letters, digits, '.', ':', '_' or '-'";

/**
 * A connection that never queues commands while Redis is away and waits a bounded time for
 * each, reconnecting in the background (every second at most).
 */
export function streamConnectionOptions(commandTimeoutMs: number): ConnectionOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: commandTimeoutMs,
    connectTimeout: 2_000,
    retryStrategy: reconnectWithinASecond,
  };
}

/** Resolves after `ms`, or sooner when the function handed to `register` is called. */
export function waitOrWake(ms: number, register: (wake: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      register(() => {});
      resolve();
    }
    register(done);
  });
}

/** Resolves once the connection is ready, or after `timeoutMs` (the caller's retries take over). */
export function connected(redis: RedisConnection, timeoutMs = 2_000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    redis.once('ready', done);
  });
}
