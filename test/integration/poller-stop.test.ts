import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/api/index.ts';
import { Poller } from '../../src/poller/index.ts';
import { demoKey } from '../../src/sandbox/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { captureLogger } from '../helpers/fake-transport.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

/** Forwards to `target`, each request held `holdMs` first: a slow server, with the sandbox's answers and rate headers. */
async function slowProxy(target: string, holdMs: number): Promise<{ server: Server; url: string; received: () => number }> {
  let received = 0;
  const server = createServer(async (req, res) => {
    received++;
    await new Promise((resolve) => setTimeout(resolve, holdMs));
    const answer = await fetch(`${target}${req.url}`, { headers: { authorization: req.headers.authorization ?? '' } });
    const headers = Object.fromEntries([...answer.headers].filter(([k]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(k)));
    res.writeHead(answer.status, headers).end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, received: () => received };
}

describe('a poller stopping against a real server', () => {
  it('drops at once the polls still waiting at the rate gate, and gives the one on its way the grace to finish', { timeout: 60_000 }, async () => {
    // One request a minute: the first poll goes, the other two wait at the gate for most of that minute.
    const tight = demoKey('enterprise', { name: 'one-a-minute' });
    const sb = await testSandbox({ apiKeys: [tight], enterpriseLimits: { limit: 1, burst: 1 } });
    const proxy = await slowProxy(sb.baseUrl.replace(/\/v1$/, ''), 800);
    const store = SnapshotStore.open(tempDbPath());
    try {
      const client = new IndexClient({ baseUrl: proxy.url, apiKey: tight.key, tier: 'enterprise', enterpriseLimits: { limit: 1, burst: 1 } });
      const jobs = ['sindex', 'mindex', 'dindex'].map((id) => ({ name: `composition:${id}`, kind: 'composition' as const, indexId: id, intervalMs: 60_000 }));
      const { logger, lines } = captureLogger();
      const polled: { job: string; ok: boolean }[] = [];
      const poller = new Poller({ client, store, jobs, logger, onPoll: (p) => polled.push(p) });
      const runs = poller.tick();
      expect(runs).toHaveLength(3);
      // The first request is on its way (held by the slow server) when the stop comes.
      while (proxy.received() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      const asked = Date.now();
      await poller.stop(10_000);
      const tookMs = Date.now() - asked;
      await Promise.all(runs);
      // It waited for the one sent (held 800 ms), not for the two queued (before: the whole 10 s grace, then all aborted).
      expect(tookMs).toBeGreaterThan(500);
      expect(tookMs).toBeLessThan(5_000);
      expect(polled).toEqual([{ job: 'composition:sindex', ok: true, lateMs: expect.any(Number), durationMs: expect.any(Number) }]);
      expect(store.jobStates().map((s) => [s.job, s.lastSuccessAt !== null, s.lastError])).toEqual([['composition:sindex', true, null]]);
      expect(lines.filter((l) => l.includes('polls still running at shutdown') || l.includes('poll failed'))).toEqual([]);
      expect(sb.counters().total).toBe(1);
    } finally {
      store.close();
      proxy.server.close();
      await sb.close();
    }
  });
});
