import { describe, expect, it } from 'vitest';
import { mulberry32 as rng } from '../../src/core/index.ts';
import { type DaemonProcess, readDb, sandboxConfig, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { liveSandboxWithRedis } from '../helpers/live-roles.ts';
import { control } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const INDEXES = ['dindex', 'mindex'];

const live = liveSandboxWithRedis();

/** The ids the counting strategy saw, in order, from a runner's own database. */
const seenBy = (db: string) =>
  readDb(db, (d) => {
    const row = d.prepare("SELECT value FROM strategy_state WHERE strategy = 'counting' AND key = 'seen'").get() as { value: string } | undefined;
    return row ? (JSON.parse(row.value) as string[]) : [];
  });
const rebalanceEventIds = (db: string) => readDb(db, (d) => (d.prepare("SELECT id FROM events WHERE type LIKE 'rebalance.%' ORDER BY seq").all() as { id: string }[]).map((r) => r.id));

describe('one collector, two strategy runners, over a Redis Stream', () => {
  it('every rebalance reaches each runner’s counting strategy exactly once across SIGKILLs of each', async () => {
    const collectorDb = tempDbPath();
    const collectorConfig = sandboxConfig(live.sb, collectorDb, { indexes: INDEXES, intervals: { rebalancing: 1, composition: 1, performance: 5, indexes: 5, tokens: 5 } });
    const runnerDbs = [tempDbPath(), tempDbPath()];
    const runnerConfigs = runnerDbs.map((db) => sandboxConfig({ baseUrl: 'http://127.0.0.1:1/v1' }, db, { strategies: { dir: 'test/fixtures/strategies/counting' } }));
    const env = { INDEXBOT_API_KEY: live.sb.keys.premium, INDEXBOT_EVENTS_URL: live.redis.url };
    const start = {
      collector: () => spawnDaemon(['--config', collectorConfig, '--role', 'collector'], env),
      runner0: () => spawnDaemon(['--config', runnerConfigs[0]!, '--role', 'strategies', '--group', 'runner-0'], env),
      runner1: () => spawnDaemon(['--config', runnerConfigs[1]!, '--role', 'strategies', '--group', 'runner-1'], env),
    };
    type Name = keyof typeof start;
    const running: Record<Name, DaemonProcess> = { collector: start.collector(), runner0: start.runner0(), runner1: start.runner1() };
    const up = (p: DaemonProcess) =>
      waitFor('the process running', () => /indexbot running/.test(p.output()), 90_000, 50).catch((e) => Promise.reject(new Error(`${e.message}: ${p.output().slice(-1500)}`)));
    await Promise.all(Object.values(running).map(up));

    const random = rng(20261123);
    const triggered: string[] = [];
    const order: Name[] = ['collector', 'runner0', 'runner1', 'collector', 'runner1'];
    try {
      for (const victim of order) {
        const index = INDEXES[triggered.length % INDEXES.length]!;
        // Announced long enough to outlast a kill and a slow restart of the collector (a phase
        // wholly inside a blackout yields only its completion, as the README says).
        triggered.push((await control(live.sb, '/rebalance', { index_id: index, effective_in_seconds: 15 })).json.data.id);
        await new Promise((r) => setTimeout(r, 300 + Math.floor(random() * 2_000)));
        running[victim].child.kill('SIGKILL');
        await running[victim].exited;
        running[victim] = start[victim]();
        await up(running[victim]);
      }
      // Every triggered rebalance announced and completed in the collector's log, and in both runners' strategies.
      await waitFor('every rebalance in the collector log', () => triggered.every((id) => rebalanceEventIds(collectorDb).filter((e) => e.endsWith(`:${id}`)).length >= 2), 60_000);
      const published = rebalanceEventIds(collectorDb);
      for (const db of runnerDbs) {
        await waitFor('the runner to count every rebalance', () => published.every((id) => seenBy(db).includes(id)), 60_000);
        // One read: the runner goes on counting performance events between two reads.
        const seen = seenBy(db);
        expect(seen.filter((id) => id.startsWith('rebalance.'))).toEqual(published);
        expect(new Set(seen).size).toBe(seen.length);
      }
    } finally {
      for (const p of Object.values(running)) p.child.kill('SIGTERM');
      const codes = await Promise.all(Object.values(running).map((p) => p.exited));
      expect(codes).toEqual([0, 0, 0]);
      // Each says what it stops: a runner polls nothing (it said "no new polls" too).
      const stopping = (p: { output: () => string }) =>
        p
          .output()
          .split('\n')
          .filter((l) => l.includes('"msg":"stopping: '));
      expect(stopping(running.collector)).toEqual([expect.stringContaining('"msg":"stopping: no new polls; waiting for those in flight"')]);
      expect(stopping(running.runner0)).toEqual([expect.stringContaining('"msg":"stopping: no new reads of the event stream; finishing the events in hand"')]);
    }
  }, 400_000);
});
