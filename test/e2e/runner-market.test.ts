import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SnapshotStore } from '../../src/store/index.ts';
import { type DaemonProcess, readDb, sandboxConfig, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { liveSandboxWithRedis } from '../helpers/live-roles.ts';
import { control } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const live = liveSandboxWithRedis();

interface EventRow {
  seq: number;
  id: string;
  type: string;
}

/**
 * The collector's cache as it stood when it committed event `seq`: a copy without the
 * snapshots (and their rows) it stored after that event.
 */
function collectorAt(collectorDb: string, seq: number): SnapshotStore {
  const path = tempDbPath();
  const source = new Database(collectorDb, { readonly: true });
  source.prepare('VACUUM INTO ?').run(path);
  source.close();
  const copy = new Database(path);
  const later = 'SELECT id FROM snapshots WHERE after_seq >= ?';
  copy.prepare(`DELETE FROM performance_points WHERE snapshot_id IN (${later})`).run(seq);
  copy.prepare(`DELETE FROM composition_rows WHERE snapshot_id IN (${later})`).run(seq);
  copy.prepare(`DELETE FROM snapshots WHERE id IN (${later})`).run(seq);
  copy.close();
  return SnapshotStore.open(path, { readonly: true });
}

describe('a strategies runner has the collector’s market data', () => {
  it('its strategies read the compositions and fill paper orders at the prices the collector held at each event', async () => {
    const collectorDb = tempDbPath();
    // Tokens once, at start: their list is the one table kept as latest-only, so the cut copy above stays exact.
    const collectorConfig = sandboxConfig(live.sb, collectorDb, { indexes: ['dindex'], intervals: { rebalancing: 1, composition: 1, performance: 1, indexes: 30, tokens: 3600 } });
    const runnerDb = tempDbPath();
    const runnerConfig = sandboxConfig({ baseUrl: 'http://127.0.0.1:1/v1' }, runnerDb, {
      strategies: { dir: 'test/fixtures/strategies/runner-market', paper: { feeBps: 0, slippageBps: 0 } },
    });
    const env = { INDEXBOT_API_KEY: live.sb.keys.premium, INDEXBOT_EVENTS_URL: live.redis.url };
    const processes: DaemonProcess[] = [
      spawnDaemon(['--config', collectorConfig, '--role', 'collector'], env),
      spawnDaemon(['--config', runnerConfig, '--role', 'strategies', '--group', 'runner-market'], env),
    ];
    try {
      for (const p of processes) {
        await waitFor('the process running', () => /indexbot running/.test(p.output()), 90_000, 50).catch((e) => Promise.reject(new Error(`${e.message}: ${p.output().slice(-1500)}`)));
      }
      // The first polls reached the runner: a rebalance announced before would find no prices there yet, as it would in the collector.
      await waitFor('the runner to hold the collector’s first composition', () => readDb(runnerDb, (d) => d.prepare("SELECT 1 FROM snapshots WHERE endpoint = 'composition'").get()), 30_000, 100);
      const rebalances: string[] = [];
      const collectorHas = (id: string) => readDb(collectorDb, (d) => d.prepare('SELECT 1 FROM events WHERE id = ?').get(id) !== undefined);
      // One after the other: a rebalance announced while another is pending cancels that one.
      for (let i = 0; i < 2; i++) {
        const id = (await control(live.sb, '/rebalance', { index_id: 'dindex', effective_in_seconds: 2 })).json.data.id as string;
        rebalances.push(id);
        await waitFor('the collector to see it completed', () => collectorHas(`rebalance.completed:dindex:${id}`), 30_000, 100);
      }
      const completedIds = rebalances.map((id) => `rebalance.completed:dindex:${id}`);
      const readings = () =>
        readDb(runnerDb, (d) =>
          Object.fromEntries((d.prepare("SELECT key, value FROM strategy_state WHERE strategy = 'market-reader'").all() as { key: string; value: string }[]).map((r) => [r.key, JSON.parse(r.value)])),
        );
      await waitFor('the runner to handle every completed rebalance', () => completedIds.every((id) => id in readings()), 60_000, 100).catch((e) =>
        Promise.reject(
          new Error(
            `${e.message}: collector ${JSON.stringify(readDb(collectorDb, (d) => d.prepare('SELECT seq, id FROM events').all()))}, runner ${JSON.stringify(readDb(runnerDb, (d) => d.prepare('SELECT seq, id FROM events').all()))} ${JSON.stringify(readings())} ${processes[1]!.output().slice(-2000)}`,
          ),
        ),
      );
      const events = readDb(collectorDb, (d) => d.prepare('SELECT seq, id, type FROM events ORDER BY seq').all() as EventRow[]);
      const fills = readDb(runnerDb, (d) => d.prepare("SELECT event_id, instrument, price, at FROM paper_fills WHERE account = 'strategy:rebalance-front-run'").all()) as {
        event_id: string;
        instrument: string;
        price: number;
        at: number;
      }[];
      expect(fills.length).toBeGreaterThan(0);

      for (const id of completedIds) {
        const seq = events.find((e) => e.id === id)!.seq;
        const reading = readings()[id] as { at: number; composition: unknown; nav: number | null };
        const collector = collectorAt(collectorDb, seq);
        try {
          expect(reading.composition).not.toBeNull();
          expect(reading.composition).toEqual(collector.compositionAt('dindex', reading.at));
          expect(reading.nav).toEqual(collector.navAt('dindex', reading.at)?.nav ?? null);
        } finally {
          collector.close();
        }
      }
      for (const fill of fills) {
        const seq = events.find((e) => e.id === fill.event_id)!.seq;
        const collector = collectorAt(collectorDb, seq);
        try {
          const address = fill.instrument.replace(/^token:/, '');
          // The ledger stores a price as decimal text, the shortest form of the double it was.
          expect(Number(fill.price)).toBe(collector.tokenPriceAt(address, fill.at)?.priceUsd);
        } finally {
          collector.close();
        }
      }
    } finally {
      for (const p of processes) p.child.kill('SIGTERM');
      expect(await Promise.all(processes.map((p) => p.exited))).toEqual([0, 0]);
    }
  }, 240_000);
});
