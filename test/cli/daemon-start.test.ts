import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon } from '../../src/cli/daemon.ts';
import { loadConfig } from '../../src/config/index.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { lockIsFree, sandboxConfig } from '../helpers/daemon.ts';
import { captureLogger } from '../helpers/fake-transport.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

let sb: Sandbox;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  sb = await testSandbox({ rateWindowMs: 10_000 });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await sb.close();
});

describe('startDaemon', () => {
  it('stops the strategy and alert loops it started when a later step fails, and gives the lock back', async () => {
    // The last step before polling, the HTTP face, fails for real: its port is taken.
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as AddressInfo).port;
    const db = tempDbPath();
    const file = sandboxConfig(sb, db, {
      indexes: ['sindex'],
      http: { listen: `127.0.0.1:${port}` },
      strategies: { dir: 'test/fixtures/strategies/counting' },
      alerts: { sinks: [{ type: 'webhook', name: 'hook', url: `${receiver.url}/hook` }] },
    });
    const config = loadConfig({ config: file }, { INDEXBOT_API_KEY: sb.keys.premium });
    const { logger, lines } = captureLogger();
    try {
      await expect(startDaemon(config, { logger })).rejects.toThrow(String(port));
    } finally {
      taken.close();
    }
    const atFailure = lines.length;
    // Long enough for either loop's next round (idle 1 s, retries sooner).
    await new Promise((r) => setTimeout(r, 2_500));
    expect(lines.slice(atFailure).filter((l) => l.includes('"component":"strategy"') || l.includes('"component":"alerts"'))).toEqual([]);
    expect(lockIsFree(db)).toBe(true);
  });
});
