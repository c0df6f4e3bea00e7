import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { runDoctor } from '../../src/cli/doctor-command.ts';
import { loadConfig } from '../../src/config/index.ts';
import type { NewEvent } from '../../src/detect/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { StrategyRuntime, loadStrategies } from '../../src/strategy/index.ts';
import { captureLogger } from '../helpers/fake-transport.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const event = (i: number): NewEvent => ({
  id: `rebalance.announced:sindex:rb_${i}`,
  type: 'rebalance.announced',
  indexId: 'sindex',
  occurredAt: i,
  detectedAt: i,
  payload: { rebalanceId: `rb_${i}`, announcedAt: i, effectiveAt: i + 1, reason: 'manual', changes: [] },
});

describe('reads that must not mislead', () => {
  it('strategies retry without the parked strategy loaded says so and exits non-zero, keeping the events parked', { timeout: 60_000 }, async () => {
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    store.appendEvents([event(1), event(2), event(3)]);
    const strategies = await loadStrategies('test/fixtures/strategies/mixed', { logger: captureLogger().logger });
    await new StrategyRuntime({ store, strategies, maxAttempts: 1, retryBaseMs: 1 }).drain();
    const parked = store.strategies.parked().length;
    expect(parked).toBeGreaterThanOrEqual(3);
    store.close();
    const retry = spawnSync(process.execPath, ['bin/indexbot.js', 'strategies', 'retry', '--db', db, '--strategies', 'test/fixtures/strategies/counting'], { encoding: 'utf8' });
    expect(retry.stdout).not.toContain('parked events delivered');
    expect(retry.stderr.trim().split('\n')).toHaveLength(1);
    expect(retry.stderr).toMatch(new RegExp(`^indexbot: strateg(y|ies) .*"always-throws".* not loaded from test/fixtures/strategies/counting \\(${parked} parked event\\(s\\)\\)`));
    expect(retry.status).toBe(78);
    const after = SnapshotStore.open(db, { readonly: true });
    expect(after.strategies.parked()).toHaveLength(parked);
    after.close();
  });

  it('doctor without a credential names INDEXBOT_API_KEY', async () => {
    const sandbox = await testSandbox();
    try {
      const checks = await runDoctor(loadConfig({ baseUrl: sandbox.baseUrl, db: tempDbPath() }, {}));
      const credentials = checks.find((c) => c.name === 'credentials')!;
      expect(credentials.detail).toContain('INDEXBOT_API_KEY');
      expect(credentials.detail).toContain('public tier');
    } finally {
      await sandbox.close();
    }
  });
});
