import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { runCli, readDb, sandboxConfig, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

describe('a daemon run before the backfill (found by a new-user trial)', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await testSandbox();
  });
  afterAll(async () => sandbox.close());

  it('changes nothing a backtest replays: the same events and fills as a cache filled by backfill alone', { timeout: 90_000 }, async () => {
    const polled = tempDbPath();
    const backfilled = tempDbPath();
    const env = (db: string) => ({ INDEXBOT_API_KEY: sandbox.keys.premium, INDEXBOT_CONFIG: sandboxConfig(sandbox, db, { indexes: ['mindex'] }) });
    // The daemon's polls see records that finished months ago, on this machine's clock (days after the sandbox's).
    const daemon = spawnDaemon([], env(polled));
    await waitFor(
      "the daemon's first rebalancing poll",
      () => readDb(polled, (d) => (d.prepare("SELECT COUNT(*) AS n FROM rebalances WHERE index_id = 'mindex' AND status = 'completed'").get() as { n: number }).n > 0),
      30_000,
    );
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited, daemon.output()).toBe(0);
    const reports = [];
    for (const db of [polled, backfilled]) {
      const fill = await runCli(['backfill', '--from', '2026-06-01', '--to', '2026-11-15', '--indexes', 'mindex'], env(db));
      expect(fill.status, fill.stderr).toBe(0);
      const run = await runCli(['backtest', '--strategy', 'rebalance-front-run', '--from', '2026-06-01', '--to', '2026-11-15', '--indexes', 'mindex', '--json'], env(db));
      expect(run.status, run.stderr).toBe(0);
      reports.push(JSON.parse(run.stdout));
    }
    const [afterPolls, alone] = reports;
    // Each completion was replayed at the daemon's first poll, after the range: none reached the strategy.
    expect(alone.events.detected['rebalance.completed']).toBeGreaterThan(3);
    // Drift too: backfill fetches every rebalancing record, as the daemon's polls stored them, so the targets at the start agree (they differed by 81 drift events).
    expect(afterPolls.events.detected).toEqual(alone.events.detected);
    expect(afterPolls.fills.hash).toBe(alone.fills.hash);
    expect(afterPolls.metrics.totalReturn).toBe(alone.metrics.totalReturn);
  });
});
