import { describe, expect, it } from 'vitest';
import { readDb, sandboxConfig, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { liveSandboxWithRedis } from '../helpers/live-roles.ts';
import { parsePrometheusText, sampleValue } from '../helpers/prom-text.ts';
import { control } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const live = liveSandboxWithRedis();

describe('a collector cut off from the event stream', () => {
  it('says Redis is gone when it goes, counts the events it holds back in indexbot_event_stream_unpublished, and back to 0 once Redis is back', async () => {
    const db = tempDbPath();
    // Only the feed polled often: for a minute after the first polls, nothing new to publish but the rebalance.
    const config = sandboxConfig(live.sb, db, { indexes: ['dindex'], intervals: { rebalancing: 1, composition: 60, performance: 60, indexes: 60, tokens: 60 } });
    const collector = spawnDaemon(['--config', config, '--role', 'collector', '--http', '127.0.0.1:0'], { INDEXBOT_API_KEY: live.sb.keys.premium, INDEXBOT_EVENTS_URL: live.redis.url });
    const unpublished = async (url: string) => sampleValue(parsePrometheusText(await (await fetch(`${url}/metrics`)).text()), 'indexbot_event_stream_unpublished');
    // What the log and the publisher's cursor say, read from the database as `status` reads it.
    const held = () =>
      readDb(db, (d) => {
        const last = (d.prepare('SELECT MAX(seq) AS seq FROM events').get() as { seq: number | null }).seq ?? 0;
        const cursor = (d.prepare("SELECT seq FROM cursors WHERE consumer = 'stream:indexbot:events'").get() as { seq: number } | undefined)?.seq ?? 0;
        return last - cursor;
      });
    try {
      const url = await waitFor('the http face', () => /"url":"(http:[^"]+)"[^\n]*http face listening/.exec(collector.output())?.[1], 60_000);
      await waitFor('the collector running', () => /indexbot running/.test(collector.output()), 60_000, 50);
      await waitFor('everything published', async () => (await unpublished(url)) === 0 && held() === 0, 30_000);

      await live.redis.kill();
      // Said when Redis goes, before there is anything to publish.
      await waitFor('the collector to say Redis is gone', () => collector.output().includes('could not publish events to the stream; retrying with backoff'), 10_000);
      const id = (await control(live.sb, '/rebalance', { index_id: 'dindex', effective_in_seconds: 3 })).json.data.id as string;
      const logged = () => readDb(db, (d) => d.prepare('SELECT COUNT(*) AS n FROM events WHERE id LIKE ?').get(`rebalance.%:dindex:${id}`) as { n: number }).n;
      await waitFor('the announcement and the completion in the log', () => logged() >= 2, 30_000);
      const backlog = await unpublished(url);
      expect(backlog).toBeGreaterThanOrEqual(2);
      // The gauge and the database agree, within what a poll between the two reads may add.
      expect(held()).toBeGreaterThanOrEqual(backlog);

      await live.redis.restart();
      await waitFor('the backlog published', async () => (await unpublished(url)) === 0 && held() === 0, 30_000);
      expect(collector.output()).toContain('event stream reachable again; publishing');
    } finally {
      collector.child.kill('SIGTERM');
      expect(await collector.exited).toBe(0);
    }
  }, 120_000);
});
