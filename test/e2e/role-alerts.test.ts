import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DaemonProcess, readDb, sandboxConfig, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { liveSandboxWithRedis } from '../helpers/live-roles.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { control } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const live = liveSandboxWithRedis();
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

describe('alerts in a collector + runners deployment', () => {
  it('the collector alerts each event once and each runner only its strategies’ alerts, with one config for all', async () => {
    // One config shape for every process, as a team copies it: the same sink everywhere.
    const alerts = { sinks: [{ type: 'webhook', name: 'hook', url: `${receiver.url}/hook` }] };
    const collectorDb = tempDbPath();
    const collectorConfig = sandboxConfig(live.sb, collectorDb, { indexes: ['dindex'], intervals: { rebalancing: 1, composition: 1, performance: 5, indexes: 5, tokens: 5 }, alerts });
    const runnerDbs = [tempDbPath(), tempDbPath()];
    const runnerConfigs = runnerDbs.map((db) => sandboxConfig({ baseUrl: 'http://127.0.0.1:1/v1' }, db, { strategies: { dir: 'test/fixtures/strategies/alerting' }, alerts }));
    const env = { INDEXBOT_API_KEY: live.sb.keys.premium, INDEXBOT_EVENTS_URL: live.redis.url };
    const processes: DaemonProcess[] = [
      spawnDaemon(['--config', collectorConfig, '--role', 'collector'], env),
      ...runnerConfigs.map((config, i) => spawnDaemon(['--config', config, '--role', 'strategies', '--group', `runner-${i}`], env)),
    ];
    try {
      for (const p of processes)
        await waitFor('the process running', () => /indexbot running/.test(p.output()), 60_000, 50).catch((e) => Promise.reject(new Error(`${e.message}: ${p.output().slice(-1500)}`)));
      const rebalanceId = (await control(live.sb, '/rebalance', { index_id: 'dindex', effective_in_seconds: 4 })).json.data.id as string;
      const keys = () => receiver.requests.map((r) => r.headers['idempotency-key'] as string);
      const completed = `rebalance.completed:dindex:${rebalanceId}`;
      await waitFor('the completion alerted and both runners’ alerts delivered', () => keys().includes(completed) && keys().filter((k) => k.startsWith('strategy.alert:')).length >= 2, 60_000);
      // Each runner's sink has passed the completion in its own log: a copy would have been sent by now.
      for (const db of runnerDbs)
        await waitFor(
          'the runner’s sink past the completion',
          () =>
            readDb(db, (d) => {
              const at = d.prepare('SELECT seq FROM events WHERE id = ?').get(completed) as { seq: number } | undefined;
              const cursor = d.prepare("SELECT seq FROM cursors WHERE consumer = 'alert:hook'").get() as { seq: number } | undefined;
              return at !== undefined && cursor !== undefined && cursor.seq >= at.seq;
            }),
          20_000,
        );
      const eventKeys = keys().filter((k) => k.startsWith('rebalance.'));
      expect(eventKeys).toEqual([...new Set(eventKeys)]);
      expect(eventKeys).toContain(`rebalance.announced:dindex:${rebalanceId}`);
      expect(eventKeys).toContain(completed);
      const strategyAlerts = receiver.requests.filter((r) => r.headers['idempotency-key']?.toString().startsWith('strategy.alert:')).map((r) => JSON.parse(r.body));
      expect(strategyAlerts.map((a) => a.eventId)).toEqual([`rebalance.announced:dindex:${rebalanceId}`, `rebalance.announced:dindex:${rebalanceId}`]);
      // Each runner numbers its alerts from 1: the database in the key keeps a receiver from taking one for the other's resend.
      expect(new Set(strategyAlerts.map((a) => a.id)).size).toBe(2);
      // Nothing waits in a runner's outbox: it queued no event.
      for (const db of runnerDbs)
        expect(readDb(db, (d) => d.prepare('SELECT event_id AS id, status FROM alert_outbox').all())).toEqual([{ id: expect.stringMatching(/^strategy\.alert:/), status: 'delivered' }]);
    } finally {
      for (const p of processes) p.child.kill('SIGTERM');
      expect(await Promise.all(processes.map((p) => p.exited))).toEqual([0, 0, 0]);
    }
  }, 120_000);
});
