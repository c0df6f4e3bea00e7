import { setMaxListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/api/index.ts';
import { createClient } from '../../src/cli/daemon.ts';
import { loadConfig } from '../../src/config/index.ts';
import { silentLogger } from '../../src/core/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { writeConfig } from '../helpers/daemon.ts';
import { type FixedWindowServer, startFixedWindowServer } from '../helpers/fixed-window-server.ts';
import { raw } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const WINDOW_MS = 6_000;
const LIMIT = 30;

let server: FixedWindowServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** `n` calls at once, as a poll with that many due jobs makes them; those still held by the gate after `forMs` are aborted. */
async function burstOfCalls(client: IndexClient, n: number, forMs: number): Promise<void> {
  const abort = new AbortController();
  setMaxListeners(n + 10, abort.signal);
  const timer = setTimeout(() => abort.abort(), forMs);
  await Promise.allSettled(Array.from({ length: n }, () => client.getComposition('sindex', { signal: abort.signal })));
  clearTimeout(timer);
}

describe('RateGate cold start (issue 13 item 5)', () => {
  it('does not burst into a spent window when the first answer carries no rate headers', async () => {
    // Headers are left off every third 2xx: with 20 already spent, the bot's first answer is the 21st.
    server = await startFixedWindowServer({ limit: LIMIT, windowMs: WINDOW_MS, omitHeaders: (n) => n % 3 === 0 });
    for (let i = 0; i < 20; i++) expect((await raw(`${server.baseUrl}/indexes/sindex/composition`)).status).toBe(200);
    const client = new IndexClient({ baseUrl: server.baseUrl, apiKey: 'cold-start-key', tier: 'basic', windowMs: WINDOW_MS });
    await burstOfCalls(client, 20, 1_500);
    expect(server.windowOf(Date.now())).toBe(0);
    expect(server.rateLimited()).toBe(0);
    expect(server.perWindow()[0]).toBe(LIMIT);
  });

  it('a restarted daemon starts from the gate state the last one persisted', async () => {
    server = await startFixedWindowServer({ limit: LIMIT, windowMs: WINDOW_MS });
    const db = tempDbPath();
    const config = loadConfig({ config: writeConfig(db, { baseUrl: server.baseUrl, db, tier: 'basic', rateWindowMs: WINDOW_MS }) }, { INDEXBOT_API_KEY: 'restart-key' });
    const store = SnapshotStore.open(db);
    try {
      // The first process spends the whole window and reports its gate, then dies.
      const first = createClient(config, store, silentLogger);
      await burstOfCalls(first, LIMIT, 1_000);
      expect(server.perWindow()[0]).toBe(LIMIT);
      store.setRuntime('gates', { gates: first.rateGates() }, Date.now());

      const second = createClient(config, store, silentLogger);
      const started = Date.now();
      await second.getComposition('sindex');
      expect(server.rateLimited()).toBe(0);
      expect(server.windowOf(Date.now())).toBe(1);
      expect(Date.now() - started).toBeGreaterThan(1_000);
    } finally {
      store.close();
    }
  });
});
