import { describe, expect, it } from 'vitest';
import { startDaemon } from '../../src/cli/daemon.ts';
import { loadConfig } from '../../src/config/index.ts';
import { silentLogger } from '../../src/core/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import type { Fill } from '../../src/strategy/index.ts';
import { waitFor, writeConfig } from '../helpers/daemon.ts';
import { control, testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

interface Change {
  address: string;
  symbol: string;
  action: string;
}

describe('a token an announced rebalance adds, live', () => {
  it('the example front-run strategy buys it at the first poll, at the token list price', { timeout: 90_000 }, async () => {
    // Real time in the sandbox (frozen), so the announcement's effective_at is ahead of the strategy's clock.
    // Whether a manual rebalance adds a token depends on the market at that time: on some
    // days no index of seed 7 did (the test failed by the date alone), so seeds are tried in
    // turn until one gives an addition.
    let sandbox: Awaited<ReturnType<typeof testSandbox>> | undefined;
    let indexId: string | undefined;
    let added: Change | undefined;
    try {
      for (let seed = 7; seed < 27 && !added; seed++) {
        await sandbox?.close();
        sandbox = await testSandbox({ seed, startTime: Date.now(), rateWindowMs: 10_000 });
        for (const id of ['sindex', 'mindex', 'dindex', 'nindex', 'aindex', 'gindex', 'lindex', 'tindex']) {
          const rb = (await control(sandbox, '/rebalance', { index_id: id, effective_in_seconds: 3_600 })).json.data as { changes: Change[] };
          added = rb.changes.find((c) => c.action === 'add');
          if (added) {
            indexId = id;
            break;
          }
        }
      }
      expect(added, 'one of the triggered rebalances adds a token').toBeDefined();
      const db = tempDbPath();
      const path = writeConfig(db, {
        baseUrl: sandbox!.baseUrl,
        db,
        tier: 'premium',
        rateWindowMs: 10_000,
        indexes: [indexId],
        strategies: { dir: 'strategies', disabled: ['drift-reversion', 'rebalance-alert'], params: { 'rebalance-front-run': { maxTokens: 50, minIncrease: 0 } } },
      });
      const config = loadConfig({ config: path }, { INDEXBOT_API_KEY: sandbox!.keys.premium });
      const fills: Fill[] = [];
      const daemon = await startDaemon(config, { logger: silentLogger, onFill: (_strategy, fill) => fills.push(fill) });
      try {
        await waitFor('a paper fill of the added token', () => fills.find((f) => f.instrument.includes(added!.address)), 30_000);
      } finally {
        await daemon.stop();
      }
      const store = SnapshotStore.open(db, { readonly: true });
      try {
        const listed = store.tokenPriceAt(added!.address, Date.now());
        expect(listed?.priceUsd).toBeGreaterThan(0);
        const fill = fills.find((f) => f.instrument.includes(added!.address))!;
        expect(fill.side).toBe('buy');
        // At the token list's price plus the configured 5 bps of slippage.
        expect(fill.price).toBeCloseTo(listed!.priceUsd * 1.0005, 6);
      } finally {
        store.close();
      }
    } finally {
      await sandbox?.close();
    }
  });
});
