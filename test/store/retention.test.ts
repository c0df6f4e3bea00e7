import { describe, expect, it, vi } from 'vitest';
import type { Composition } from '../../src/contract/index.ts';
import { ManualClock } from '../../src/core/index.ts';
import { RetentionJob, SnapshotStore } from '../../src/store/index.ts';
import { captureLogger } from '../helpers/fake-transport.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 22);

function composition(indexId: string, at: number): Composition {
  return {
    index_id: indexId,
    as_of: new Date(at).toISOString(),
    rebalance_id: null,
    constituents: [
      { address: 'A'.repeat(44), symbol: 'AAA', weight: 0.6, target_weight: 0.6, price_usd: 1 + at / 1e12 },
      { address: 'B'.repeat(44), symbol: 'BBB', weight: 0.4, target_weight: 0.4, price_usd: 2 },
    ],
  } as Composition;
}

/** A store with a composition snapshot of each index every 6 hours over 40 days, plus outbox rows. */
function filled() {
  const store = SnapshotStore.open(tempDbPath());
  store.transaction(() => {
    for (const indexId of ['sindex', 'mindex']) {
      for (let t = NOW - 40 * DAY; t <= NOW - DAY; t += 6 * 3_600_000) {
        const c = composition(indexId, t);
        const id = store.insertSnapshot({ endpoint: 'composition', indexId, fetchedAt: t, asOf: t, hash: `${indexId}${t}`, raw: JSON.stringify(c), status: 'accepted' });
        store.insertComposition(id, c);
      }
    }
    // An endpoint polled once, long ago: its only snapshot is the one the next poll compares with.
    store.insertSnapshot({ endpoint: 'tokens', indexId: null, fetchedAt: NOW - 90 * DAY, asOf: null, hash: 'tokens', raw: '[]', status: 'accepted' });
    store.appendEvents([1, 2, 3].map((i) => ({ id: `e${i}`, type: 'rebalance.announced', indexId: 'sindex', occurredAt: 0, detectedAt: 0, payload: {} }) as never));
    store.outbox.enqueue('hook', 'e1', 1, NOW - 60 * DAY);
    store.outbox.delivered('hook', 'e1', NOW - 59 * DAY);
    store.outbox.enqueue('hook', 'e2', 2, NOW - 60 * DAY);
    store.outbox.givenUp('hook', 'e2', NOW - 2 * DAY, 'refused');
    store.outbox.enqueue('hook', 'e3', 3, NOW - 60 * DAY);
  });
  return store;
}

const count = (store: SnapshotStore, sql: string) => (store as unknown as { db: { prepare(s: string): { get(): { n: number } } } }).db.prepare(sql).get().n;

describe('RetentionJob', () => {
  it('deletes snapshots and their rows past the age, keeps the newest of each endpoint, and finished outbox rows only', async () => {
    const store = filled();
    const before = count(store, "SELECT COUNT(*) AS n FROM snapshots WHERE endpoint = 'composition'");
    const { logger, lines } = captureLogger();
    const job = new RetentionJob({ store, days: 30, batch: 7, clock: new ManualClock(NOW), logger });
    const done = await job.runOnce();

    const kept = count(store, "SELECT COUNT(*) AS n FROM snapshots WHERE endpoint = 'composition'");
    expect(done.snapshots).toBe(before - kept);
    expect(count(store, `SELECT COUNT(*) AS n FROM snapshots WHERE endpoint = 'composition' AND fetched_at < ${NOW - 30 * DAY}`)).toBe(0);
    // 29 days of 4 a day, two indexes, nothing younger lost.
    expect(kept).toBe(2 * (29 * 4 + 1));
    expect(count(store, 'SELECT COUNT(*) AS n FROM composition_rows')).toBe(kept * 2);
    expect(count(store, 'SELECT COUNT(*) AS n FROM composition_rows r LEFT JOIN snapshots s ON s.id = r.snapshot_id WHERE s.id IS NULL')).toBe(0);
    expect(store.lastSnapshotHash('tokens', null)).toBe('tokens');
    expect(store.compositionAt('sindex')!.asOf).toBe(NOW - DAY);
    expect(store.compositionAt('sindex', NOW - 35 * DAY)).toBeUndefined();

    expect(done.outbox).toBe(1);
    expect(store.outbox.summary()[0]).toMatchObject({ delivered: 0, givenUp: 1, pending: 1 });
    expect(store.eventsAfter(0, 10)).toHaveLength(3);
    expect(lines.join('\n')).toContain('pruned old snapshots, alert rows and performance data');
    expect(await job.runOnce()).toEqual({ snapshots: 0, outbox: 0, performanceEvents: 0, performancePoints: 0 });
    expect(store.integrityCheck()).toBe('ok');
    store.close();
  });

  it('deletes performance events every consumer has passed and old performance points; keeps rebalance events, and what is still owed', async () => {
    const store = SnapshotStore.open(tempDbPath());
    const HOUR = 3_600_000;
    // 40 days: a performance event and point per index every hour, a rebalance announced every day.
    store.transaction(() => {
      for (let t = NOW - 40 * DAY; t < NOW; t += HOUR) {
        for (const indexId of ['sindex', 'mindex']) {
          store.appendEvents([{ id: `performance.updated:${indexId}:${t}`, type: 'performance.updated', indexId, occurredAt: t, detectedAt: t, payload: {} } as never]);
          store.insertPerformance(null as never, { index_id: indexId, as_of: new Date(t).toISOString(), nav: 1, returns: {} } as never);
        }
        if (t % DAY === 0) store.appendEvents([{ id: `rebalance.announced:sindex:${t}`, type: 'rebalance.announced', indexId: 'sindex', occurredAt: t, detectedAt: t, payload: {} } as never]);
      }
      // An index delisted long ago: its last point is its NAV now.
      store.insertPerformance(null as never, { index_id: 'gone', as_of: new Date(NOW - 90 * DAY).toISOString(), nav: 3, returns: {} } as never);
    });
    const seqAt = (t: number) => store.eventsAfter(0, 100_000).find((e) => e.detectedAt >= t)!.seq;
    const all = store.eventsAfter(0, 100_000);
    // A strategy has read up to 35 days ago; the sinks are further on; a sink's cursor in the
    // strategy alerts (an alert id, not a seq) and a strategy's parked event hold nothing back
    // but the parked event itself; an alert still owed keeps its event.
    store.setCursor('strategy:slow', seqAt(NOW - 35 * DAY), NOW);
    store.setCursor('alert:hook', seqAt(NOW - 2 * DAY), NOW);
    store.setCursor('alert:hook:strategy-alerts', 1, NOW);
    const parked = all.find((e) => e.type === 'performance.updated' && e.detectedAt === NOW - 38 * DAY)!;
    store.strategies.park({ strategy: 'slow', seq: parked.seq, eventId: parked.id, attempts: 3, error: 'x', parkedAt: NOW });
    const owed = all.find((e) => e.type === 'performance.updated' && e.detectedAt === NOW - 37 * DAY)!;
    store.outbox.enqueue('hook', owed.id, owed.seq, NOW);

    const job = new RetentionJob({ store, days: 30, batch: 50, clock: new ManualClock(NOW) });
    const perfEvents = () => store.eventsAfter(0, 100_000).filter((e) => e.type === 'performance.updated');
    const first = await job.runOnce();
    // Only what the slow strategy has passed: up to 35 days ago, but for the parked and the owed.
    expect(
      perfEvents()
        .filter((e) => e.detectedAt < NOW - 35 * DAY)
        .map((e) => e.id)
        .sort(),
    ).toEqual([owed.id, parked.id].sort());
    expect(first.performanceEvents).toBe(2 * 5 * 24 + 1 - 2);
    // Once it has read everything, the age decides.
    store.setCursor('strategy:slow', store.lastEventSeq(), NOW);
    await job.runOnce();
    expect(
      Math.min(
        ...perfEvents()
          .filter((e) => e !== undefined && e.id !== owed.id && e.id !== parked.id)
          .map((e) => e.detectedAt),
      ),
    ).toBe(NOW - 30 * DAY);
    expect(store.eventCounts()['rebalance.announced']).toBe(40);

    const points = (indexId: string) => count(store, `SELECT COUNT(*) AS n FROM performance_points WHERE index_id = '${indexId}'`);
    expect(points('sindex')).toBe(30 * 24);
    expect(points('mindex')).toBe(30 * 24);
    expect(store.navAt('gone', NOW)).toEqual({ nav: 3, asOf: NOW - 90 * DAY });
    expect(store.integrityCheck()).toBe('ok');
    store.close();
  });

  it('runs at start and then every interval on the injected clock, until stopped', async () => {
    const store = filled();
    const clock = new ManualClock(NOW - 10 * DAY);
    const job = new RetentionJob({ store, days: 25, everyMs: DAY, clock });
    const oldest = () => count(store, "SELECT MIN(fetched_at) AS n FROM snapshots WHERE endpoint = 'composition'");
    job.start();
    await clock.advance(0);
    // Each pass yields to the event loop between batches: wait for it, not for a tick count.
    await vi.waitFor(() => expect(oldest()).toBe(NOW - 35 * DAY));
    // The pass goes on to the other tables; the next is scheduled when it ends.
    await vi.waitFor(() => expect(clock.pending).toBe(1));
    await clock.advance(DAY - 1);
    expect(oldest()).toBe(NOW - 35 * DAY);
    await clock.advance(1);
    await vi.waitFor(() => expect(oldest()).toBe(NOW - 34 * DAY));
    await job.stop();
    await clock.advance(5 * DAY);
    expect(oldest()).toBe(NOW - 34 * DAY);
    expect(clock.pending).toBe(0);
    store.close();
  });

  it('refuses a non-positive age', () => {
    const store = SnapshotStore.open(tempDbPath());
    expect(() => new RetentionJob({ store, days: 0 })).toThrow('Expected `days` to be a number > 0, got `0`');
    store.close();
  });
});
