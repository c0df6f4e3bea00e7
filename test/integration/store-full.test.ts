import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { AlertDispatcher, alertConsumer } from '../../src/alerts/index.ts';
import { IndexClient } from '../../src/api/index.ts';
import { ManualClock } from '../../src/core/index.ts';
import { Poller } from '../../src/poller/index.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { SnapshotStore, storeFailure } from '../../src/store/index.ts';
import { StrategyRuntime, consumerOf, loadStrategies } from '../../src/strategy/index.ts';
import { waitFor } from '../helpers/daemon.ts';
import { captureLogger } from '../helpers/fake-transport.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { control, testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

/**
 * A full disk, for real: SQLite's `max_page_count` on the store's own connection makes every
 * write that needs one more page fail with SQLITE_FULL, exactly as a full file system does.
 * Writes that fit in the free room of pages already there still succeed, as they would on a
 * full disk, so the tests below write enough to need new pages.
 */
function fillDisk(store: SnapshotStore): () => void {
  const db = (store as unknown as { db: Database.Database }).db;
  // Migrations that rebuild a table leave free pages in a new file; a full disk has none to reuse.
  db.exec('VACUUM');
  db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
  return () => db.pragma('max_page_count = 1073741823');
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup() {
  const sb: Sandbox = await testSandbox({ rateWindowMs: 10_000 });
  const store = SnapshotStore.open(tempDbPath());
  cleanups.push(
    () => sb.close(),
    () => store.close(),
  );
  return { sb, store };
}

const events = (store: SnapshotStore) => store.eventsAfter(0, 10_000);
const announcements = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    id: `rebalance.announced:sindex:rb_${i}`,
    type: 'rebalance.announced' as const,
    indexId: 'sindex',
    occurredAt: i,
    detectedAt: i,
    payload: { rebalanceId: `rb_${i}`, announcedAt: i, effectiveAt: i + 1, reason: 'scheduled', changes: [] },
  }));
/** Enough events that recording them (state, cursor moves, outbox rows) needs new pages. */
const N = 300;

describe('a full disk', () => {
  it('is a typed, temporary error', async () => {
    const { store } = await setup();
    fillDisk(store);
    let thrown: unknown;
    try {
      store.transaction(() => store.appendEvents([{ id: 'x', type: 'index.listed', indexId: 'x', occurredAt: 0, detectedAt: 0, payload: { name: 'x'.repeat(20_000) } } as never]));
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toMatchObject({ name: 'StoreWriteError', code: 'STORE_FULL', kind: 'temporary', sqliteCode: 'SQLITE_FULL' });
    expect((thrown as Error).message).toContain('the disk is full');
    expect(storeFailure(new Error('other'))).toBeInstanceOf(Error);
  });

  it('leaves no token id behind from the failed write: a token first seen then is stored under its own symbol once space is back', async () => {
    const { store } = await setup();
    const stored = (asOf: number, address: string, symbol: string) => {
      const id = store.insertSnapshot({ endpoint: 'composition', indexId: 'sindex', fetchedAt: asOf, asOf, hash: String(asOf), raw: '{}', status: 'accepted' });
      const constituent = { address, symbol, weight: 1, target_weight: 1, price_usd: asOf };
      store.insertComposition(id, { index_id: 'sindex', as_of: new Date(asOf).toISOString(), rebalance_id: null, constituents: [constituent] } as never);
    };
    store.transaction(() => stored(1, 'A', 'AAA'));
    const freeSpace = fillDisk(store);
    // The new token's rows fit in the free room of existing pages; what the poll writes next does not.
    const incompressible = randomBytes(200_000).toString('base64');
    expect(() =>
      store.transaction(() => {
        stored(2, 'NEW', 'NEWT');
        store.setRuntime('next write of the poll', incompressible, 2);
      }),
    ).toThrow(expect.objectContaining({ code: 'STORE_FULL' }));
    freeSpace();
    store.transaction(() => stored(3, 'OTHER', 'OTH'));
    store.transaction(() => stored(4, 'NEW', 'NEWT'));
    expect(store.compositionAt('sindex')!.constituents.map((k) => [k.address, k.symbol, k.priceUsd])).toEqual([['NEW', 'NEWT', 4]]);
    expect(store.tokenPriceAt('OTHER', 10)).toEqual({ priceUsd: 3, asOf: 3 });
    expect(store.integrityCheck()).toBe('ok');
  });

  it('fails a poll, which is logged and retried; once space is back the poll stores its events exactly once', async () => {
    const { sb, store } = await setup();
    const clock = new ManualClock(Date.now());
    const { logger, lines } = captureLogger();
    const client = new IndexClient({ baseUrl: sb.baseUrl, apiKey: sb.keys.premium, tier: 'premium', windowMs: 10_000 });
    const jobs = [{ name: 'rebalancing:sindex', kind: 'rebalancing' as const, indexId: 'sindex', intervalMs: 1_000 }];
    const poller = new Poller({ client, store, jobs, clock, logger, random: () => 0.5, backoffBaseMs: 1_000 });
    await Promise.all(poller.tick());
    const before = events(store).length;
    const snapshotsBefore = store.snapshotCounts();

    const freeSpace = fillDisk(store);
    const rb = (await control(sb, '/rebalance', { index_id: 'sindex', effective_in_seconds: 3_600 })).json.data as { id: string };
    for (let i = 0; i < 3; i++) {
      await clock.advance(60_000);
      await Promise.all(poller.tick());
    }
    const failed = lines.map((l) => JSON.parse(l) as { msg: string; error?: { code?: string } }).filter((l) => l.msg === 'poll failed');
    expect(failed.length).toBe(3);
    expect(failed.every((l) => l.error?.code === 'STORE_FULL')).toBe(true);
    expect(events(store)).toHaveLength(before);
    // The feed's poll stored nothing. The index's value, read for the announcement before it is
    // stored (the database had none), is a write of its own, and may fit where the poll did not.
    const feed = (counts: ReturnType<typeof store.snapshotCounts>) => counts.filter((c) => c.endpoint === 'rebalancing');
    expect(feed(store.snapshotCounts())).toEqual(feed(snapshotsBefore));
    expect(poller.schedule()[0]!.failures).toBe(3);

    freeSpace();
    await clock.advance(600_000);
    await Promise.all(poller.tick());
    await clock.advance(600_000);
    await Promise.all(poller.tick());
    const announced = events(store).filter((e) => e.type === 'rebalance.announced' && (e.payload as { rebalanceId: string }).rebalanceId === rb.id);
    expect(announced).toHaveLength(1);
    expect(poller.schedule()[0]!.failures).toBe(0);
    expect(store.jobStates()[0]!.lastError).toBeNull();
    expect(store.integrityCheck()).toBe('ok');
  });

  it('stops a strategy from recording progress, without losing or doubling an event once space is back', async () => {
    const { store } = await setup();
    const { logger, lines } = captureLogger();
    const strategies = await loadStrategies('test/fixtures/strategies/counting', { logger });
    const runtime = new StrategyRuntime({ store, strategies, logger, retryBaseMs: 5 });
    cleanups.push(() => runtime.stop());
    store.appendEvents(announcements(N));
    const freeSpace = fillDisk(store);
    runtime.start();
    await waitFor('a logged store failure', () => lines.some((l) => l.includes('strategy could not record its progress') && l.includes('STORE_FULL')), 5_000, 5);
    const stuckAt = store.cursor(consumerOf('counting'));
    expect(stuckAt).toBeLessThan(N);

    freeSpace();
    runtime.notify();
    await waitFor('every event delivered', () => store.cursor(consumerOf('counting')) === N, 10_000, 5);
    const seen = store.strategies.stateEntries('counting').get('seen') as string[];
    expect(seen).toEqual(Array.from({ length: N }, (_, i) => `rebalance.announced:sindex:rb_${i}`));
    expect(store.strategies.stateEntries('counting').get('count')).toBe(N);
  });

  it('fails the start of new consumers as a whole: none of their cursors is recorded, and once space is back all are', async () => {
    const { store } = await setup();
    store.appendEvents(announcements(3));
    // Enough new consumers (a long-named strategy each) that recording their starts needs new pages.
    const starts = Array.from({ length: N }, (_, i) => [consumerOf(`strategy-${String(i).padStart(3, '0')}-${'x'.repeat(60)}`), 3] as const);
    const freeSpace = fillDisk(store);
    expect(() => store.startCursors(starts, 1)).toThrow(expect.objectContaining({ name: 'StoreWriteError', code: 'STORE_FULL' }));
    expect(store.cursors()).toEqual([]);

    freeSpace();
    expect(store.startCursors(starts, 2)).toHaveLength(N);
    expect(store.cursors().map((c) => c.seq)).toEqual(Array(N).fill(3));
  });

  it('holds alerts back while it lasts, then delivers each once, in order', async () => {
    const { store } = await setup();
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const { logger, lines } = captureLogger();
    // The sink ran here before the announcements (a sink new to the database would start after them).
    store.setCursor(alertConsumer('hook'), 0, Date.now());
    store.appendEvents(announcements(N));
    const freeSpace = fillDisk(store);
    const dispatcher = new AlertDispatcher({ store, sinks: [{ type: 'webhook', name: 'hook', url: receiver.url }], logger, retryBaseMs: 5, idleMs: 5 });
    cleanups.push(() => dispatcher.stop());
    dispatcher.start();
    await waitFor('a logged store failure', () => lines.filter((l) => l.includes('alert sink round failed') && l.includes('STORE_FULL')).length >= 2, 5_000, 5);
    expect(receiver.requests).toHaveLength(0);

    freeSpace();
    await waitFor('every delivery recorded', () => store.outbox.summary().find((s) => s.sink === 'hook')?.delivered === N, 10_000, 5);
    await new Promise((r) => setTimeout(r, 50));
    expect(receiver.requests.map((r) => r.headers['idempotency-key'])).toEqual(announcements(N).map((e) => e.id));
  });

  it('keeps a delivery the sink accepted but the store could not record, and records it before sending anything again', async () => {
    const { store } = await setup();
    let accepting = false;
    const receiver = await startReceiver(() => ({ status: accepting ? 200 : 503 }));
    cleanups.push(() => receiver.close());
    const { logger, lines } = captureLogger();
    store.appendEvents(announcements(N));
    const dispatcher = new AlertDispatcher({ store, sinks: [{ type: 'webhook', name: 'hook', url: receiver.url }], logger, retryBaseMs: 5, idleMs: 5 });
    cleanups.push(() => dispatcher.stop());
    // Every alert queued while there is room; the sink refuses the first try.
    await dispatcher.runOnce();
    expect(store.outbox.summary()[0]).toMatchObject({ pending: N });
    const refused = receiver.requests.length;

    // Now recording a delivery needs pages the disk no longer has.
    const freeSpace = fillDisk(store);
    accepting = true;
    dispatcher.start();
    await waitFor('a delivery accepted but not recorded', () => lines.filter((l) => l.includes('alert sink round failed') && l.includes('STORE_FULL')).length >= 3, 10_000, 5);
    const sentWhileFull = receiver.requests.length;
    expect(sentWhileFull).toBeLessThan(refused + N);
    await new Promise((r) => setTimeout(r, 100));
    // Nothing more goes out while the accepted one cannot be recorded.
    expect(receiver.requests.length).toBe(sentWhileFull);

    freeSpace();
    await waitFor('every delivery recorded', () => store.outbox.summary()[0]?.delivered === N, 10_000, 5);
    await new Promise((r) => setTimeout(r, 50));
    const accepted = receiver.requests.slice(refused).map((r) => r.headers['idempotency-key']);
    expect(accepted).toEqual(announcements(N).map((e) => e.id));
  });
});
