import { afterAll, beforeAll } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { type TestRedis, startRedis } from './redis.ts';
import { testSandbox } from './sandbox.ts';

/**
 * For a test file of collector and runner processes: a sandbox on the real clock and a
 * redis-server, started before its tests and stopped after them (read the fields in a test).
 */
export function liveSandboxWithRedis(): { sb: Sandbox; redis: TestRedis } {
  const live = {} as { sb: Sandbox; redis: TestRedis };
  beforeAll(async () => {
    live.sb = await testSandbox({ speed: 1, startTime: Date.now(), rateWindowMs: 10_000 });
    live.redis = await startRedis();
  });
  afterAll(async () => {
    await live.redis?.stop();
    await live.sb?.close();
  });
  return live;
}
