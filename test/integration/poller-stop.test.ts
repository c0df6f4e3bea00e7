import { describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/api/index.ts';
import { Poller } from '../../src/poller/index.ts';
import { demoKey } from '../../src/sandbox/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { captureLogger } from '../helpers/fake-transport.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

describe('a poller stopping against a real server', () => {
  it('drops at once the polls still waiting at the rate gate, and waits only for the one sent', { timeout: 60_000 }, async () => {
    // One request a minute: the first poll goes, the other two wait at the gate for most of that minute.
    const tight = demoKey('enterprise', { name: 'one-a-minute' });
    const sb = await testSandbox({ apiKeys: [tight], enterpriseLimits: { limit: 1, burst: 1 } });
    const store = SnapshotStore.open(tempDbPath());
    try {
      const client = new IndexClient({ baseUrl: sb.baseUrl, apiKey: tight.key, tier: 'enterprise', enterpriseLimits: { limit: 1, burst: 1 } });
      const jobs = ['sindex', 'mindex', 'dindex'].map((id) => ({ name: `composition:${id}`, kind: 'composition' as const, indexId: id, intervalMs: 60_000 }));
      const { logger, lines } = captureLogger();
      const polled: string[] = [];
      const poller = new Poller({ client, store, jobs, logger, onPoll: (p) => polled.push(p.job) });
      const runs = poller.tick();
      expect(runs).toHaveLength(3);
      while (polled.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      const asked = Date.now();
      await poller.stop(10_000);
      // Before, the stop waited out the whole grace (10 s) for polls that were never sent, then aborted them.
      expect(Date.now() - asked).toBeLessThan(3_000);
      await Promise.all(runs);
      expect(lines.filter((l) => l.includes('polls still running at shutdown') || l.includes('poll failed'))).toEqual([]);
      // Dropped, not failed: nothing recorded against the two that never went.
      expect(store.jobStates().filter((s) => s.lastError !== null || s.consecutiveFailures > 0)).toEqual([]);
      expect(store.jobStates().filter((s) => s.lastSuccessAt !== null)).toHaveLength(1);
      expect(sb.counters().total).toBe(1);
    } finally {
      store.close();
      await sb.close();
    }
  });
});
