import { describe, expect, it, vi } from 'vitest';
import { IndexClient } from '../../src/api/index.ts';
import { ManualClock } from '../../src/core/index.ts';
import { Poller } from '../../src/poller/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { envelope, fakeTransport } from '../helpers/fake-transport.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const comp = (n: number) => envelope({ index_id: 'sindex', as_of: new Date(n * 1000).toISOString(), rebalance_id: null, constituents: [] });

function setup(handler: Parameters<typeof fakeTransport>[0], clock: ManualClock, store = SnapshotStore.open(tempDbPath())) {
  const fake = fakeTransport(handler, clock);
  const client = new IndexClient({ baseUrl: 'http://api.test/v1', adapter: fake.adapter, retries: 0, clock });
  const jobs = [
    { name: 'composition:sindex', kind: 'composition' as const, indexId: 'sindex', intervalMs: 10_000 },
    { name: 'performance:sindex', kind: 'performance' as const, indexId: 'sindex', intervalMs: 10_000 },
  ];
  const poller = new Poller({ client, store, jobs, clock, random: () => 0.5, backoffBaseMs: 1_000 });
  return { poller, store, log: fake.log };
}

describe('Poller', () => {
  it('never overlaps a job with itself', async () => {
    const clock = new ManualClock();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { poller, log } = setup(async (req) => {
      if (req.path.endsWith('composition')) await gate;
      return { body: comp(1) };
    }, clock);
    poller.tick();
    await clock.advance(20_000);
    poller.tick();
    await clock.advance(20_000);
    poller.tick();
    expect(log.filter((r) => r.path.endsWith('composition'))).toHaveLength(1);
    release();
    await clock.advance(0);
  });

  it('keeps to its interval when the ticks jitter by a few ms', async () => {
    const clock = new ManualClock();
    const { poller, log } = setup(() => ({ body: comp(log.length) }), clock);
    // Ticks a second apart, each early or late by up to 20 ms; the run itself takes 7 ms.
    const jitter = [0, 15, -20, 5, -10, 20, -5];
    const at = clock.now();
    for (let s = 1; s <= 60; s++) {
      const started = poller.tick();
      await clock.advance(7);
      await Promise.all(started);
      const next = s * 1_000 + jitter[s % jitter.length]!;
      await clock.advance(next - (clock.now() - at));
    }
    const times = log.filter((r) => r.path.endsWith('composition')).map((r) => r.at);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps.length).toBe(5);
    for (const gap of gaps) expect(Math.abs(gap - 10_000)).toBeLessThanOrEqual(40);
  });

  it('backs off a failing job without holding back the others', async () => {
    const clock = new ManualClock();
    const { poller, log, store } = setup(
      (req) => (req.path.endsWith('performance') ? { status: 500, body: { success: false, error: { code: 'INTERNAL_ERROR', message: 'x' }, meta: {} } } : { body: comp(log.length) }),
      clock,
    );
    for (let s = 0; s < 60; s++) {
      await Promise.all(poller.tick());
      await clock.advance(1_000);
    }
    const perf = log.filter((r) => r.path.endsWith('performance')).length;
    const compositions = log.filter((r) => r.path.endsWith('composition')).length;
    expect(compositions).toBe(6);
    // Backoff doubles from the 10 s interval: polls at 0, 10 and 30 s, the next not before 70 s.
    expect(perf).toBe(3);
    const perfJob = store.jobStates().find((j) => j.job === 'performance:sindex')!;
    expect(perfJob.consecutiveFailures).toBe(perf);
    expect(perfJob.lastError).toMatch(/HTTP 500/);
  });

  it('keeps the rebalancing feed within a few intervals of the server while it misbehaves, and on schedule from its first good answer', async () => {
    const clock = new ManualClock();
    const start = clock.now();
    const HEALTHY_AT = 40_000;
    const fake = fakeTransport(() => (clock.now() - start < HEALTHY_AT ? { body: '<html>bad gateway</html>' } : { body: envelope([]) }), clock);
    const client = new IndexClient({ baseUrl: 'http://api.test/v1', adapter: fake.adapter, retries: 0, clock });
    // Default backoff options: the high-priority job ignores the 5 s base and the 300 s cap.
    const poller = new Poller({
      client,
      store: SnapshotStore.open(tempDbPath()),
      jobs: [{ name: 'rebalancing:sindex', kind: 'rebalancing', indexId: 'sindex', intervalMs: 2_000 }],
      clock,
      random: () => 0.5,
    });
    for (let s = 0; s < 60; s++) {
      await Promise.all(poller.tick());
      await clock.advance(1_000);
    }
    const times = fake.log.map((r) => r.at - start);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    // 2, 4, 8 s, then never more than four intervals apart.
    expect(gaps.slice(0, 3)).toEqual([2_000, 4_000, 8_000]);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(8_000);
    const firstGood = times.find((t) => t >= HEALTHY_AT)!;
    expect(firstGood - HEALTHY_AT).toBeLessThanOrEqual(8_000);
    // From the first good answer: every interval again.
    expect(gaps.slice(times.indexOf(firstGood))).toEqual(gaps.slice(times.indexOf(firstGood)).map(() => 2_000));
    expect(poller.schedule()[0]!.failures).toBe(0);
  });

  it('reports a credential the server refuses on 3 polls in a row over two intervals, once; a good answer between starts the count again (found by trial 25: retried for ever)', async () => {
    const clock = new ManualClock();
    const start = clock.now();
    const unauthorized = { status: 401, body: { success: false, error: { code: 'UNAUTHORIZED', message: 'invalid API key' }, meta: {} } };
    // Refused, except one good composition at 12 s; then refused for good.
    const fake = fakeTransport((req) => (req.path.endsWith('composition') && clock.now() - start === 12_000 ? { body: comp(1) } : unauthorized), clock);
    const client = new IndexClient({ baseUrl: 'http://api.test/v1', adapter: fake.adapter, retries: 0, clock });
    const reports: { since: number; refusals: number; error: Error }[] = [];
    const poller = new Poller({
      client,
      store: SnapshotStore.open(tempDbPath()),
      jobs: [
        { name: 'composition:sindex', kind: 'composition', indexId: 'sindex', intervalMs: 4_000 },
        { name: 'performance:sindex', kind: 'performance', indexId: 'sindex', intervalMs: 4_000 },
      ],
      clock,
      random: () => 0.5,
      backoffBaseMs: 4_000,
      onCredentialRefused: (r) => reports.push(r),
    });
    const reportedAt: number[] = [];
    for (let s = 0; s < 60; s++) {
      await Promise.all(poller.tick());
      if (reports.length > reportedAt.length) reportedAt.push(clock.now() - start);
      await clock.advance(1_000);
    }
    // 0 s: two refusals (too soon: under two intervals); 4 s: backed off; 12 s: composition good, count reset.
    expect(reports).toHaveLength(1);
    expect(reports[0]!.refusals).toBeGreaterThanOrEqual(3);
    expect(reports[0]!.since - start).toBeGreaterThanOrEqual(12_000);
    expect(reportedAt[0]! - (reports[0]!.since - start)).toBeGreaterThanOrEqual(8_000);
    expect(reports[0]!.error.message).toMatch(/HTTP 401/);
  });

  it('after downtime catches up with one fetch per job, not a burst', async () => {
    const clock = new ManualClock();
    const store = SnapshotStore.open(tempDbPath());
    store.recordJobRun('composition:sindex', clock.now() - 3_600_000);
    store.recordJobRun('performance:sindex', clock.now() - 3_000);
    const { poller, log } = setup(() => ({ body: comp(log.length) }), clock, store);
    await Promise.all(poller.tick());
    expect(log.map((r) => r.path)).toEqual(['/indexes/sindex/composition']);
    await clock.advance(7_000);
    await Promise.all(poller.tick());
    expect(log.map((r) => r.path)).toEqual(['/indexes/sindex/composition', '/indexes/sindex/performance']);
  });
});

/** Rebalance rb_1 of sindex, announced a minute before the clock's now and effective an hour after, with `changes`. */
const announcedAt = (clock: ManualClock, changes: object[]) => ({
  id: 'rb_1',
  index_id: 'sindex',
  status: 'announced',
  announced_at: new Date(clock.now() - 60_000).toISOString(),
  effective_at: new Date(clock.now() + 3_600_000).toISOString(),
  completed_at: null,
  reason: 'scheduled',
  changes,
});

describe('an announcement on a new database (trial 24: an index bought at the announcement had no price)', () => {
  it('is stored only after the token list and the value of its index are read, at high priority, once per rebalance', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 24, 12));
    const now = new Date(clock.now()).toISOString();
    const changed = { address: 'OldTok'.padEnd(44, '1'), symbol: 'OLD', action: 'increase', old_weight: 0.1, new_weight: 0.2 };
    const announced = announcedAt(clock, [changed]);
    const returns = { '1h': 0, '24h': 0, '7d': 0, '30d': 0, '90d': 0, '1y': 0, ytd: 0, inception: 0 };
    const fake = fakeTransport((req) => {
      if (req.path.endsWith('/rebalancing')) return { body: envelope([announced], { pagination: { page: 1, limit: 100, total: 1 } }) };
      if (req.path.endsWith('/performance')) return { body: envelope({ index_id: 'sindex', as_of: now, nav: 123.5, returns }) };
      return { body: envelope([{ address: changed.address, symbol: 'OLD', name: 'Old', price_usd: 2.5 }], { pagination: { page: 1, limit: 100, total: 1 } }) };
    }, clock);
    const client = new IndexClient({ baseUrl: 'http://api.test/v1', adapter: fake.adapter, retries: 0, clock });
    const store = SnapshotStore.open(tempDbPath());
    const seen: { types: string[]; nav: number | undefined; price: number | undefined }[] = [];
    const onEvents = (events: { type: string }[]) =>
      seen.push({ types: events.map((e) => e.type), nav: store.navAt('sindex', clock.now())?.nav, price: store.tokenPriceAt(changed.address, clock.now())?.priceUsd });
    const poller = new Poller({ client, store, jobs: [{ name: 'rebalancing:sindex', kind: 'rebalancing', indexId: 'sindex', intervalMs: 2_000 }], clock, onEvents });
    await Promise.all(poller.tick());
    expect(fake.log.map((r) => r.path)).toEqual(['/indexes/sindex/rebalancing', '/tokens', '/indexes/sindex/performance']);
    // When strategies hear of the announcement, the index and the token it changes have a price.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.types).toContain('rebalance.announced');
    expect(seen[0]!.nav).toBe(123.5);
    expect(seen[0]!.price).toBe(2.5);
    // The next poll of the same feed reads nothing more.
    await clock.advance(2_000);
    await Promise.all(poller.tick());
    expect(fake.log.map((r) => r.path).filter((p) => !p.endsWith('/rebalancing'))).toHaveLength(2);
    store.close();
  });
});

describe('Poller.stop', () => {
  it('drops a rebalancing poll whose added token was still waiting to be priced: nothing stored, nothing recorded, for the next start to store whole', async () => {
    const clock = new ManualClock();
    const announced = announcedAt(clock, [{ address: 'NewTok'.padEnd(44, '1'), symbol: 'NEW', action: 'add', old_weight: 0, new_weight: 0.1 }]);
    const fake = fakeTransport(() => ({ body: envelope([announced], { pagination: { page: 1, limit: 100, total: 1 } }) }), clock);
    // One request a minute: the feed's goes, the token list's waits at the gate (the clock never moves).
    const client = new IndexClient({ baseUrl: 'http://api.test/v1', apiKey: 'sk_test_key', adapter: fake.adapter, retries: 0, clock, tier: 'enterprise', enterpriseLimits: { limit: 1, burst: 1 } });
    const store = SnapshotStore.open(tempDbPath());
    const polled: unknown[] = [];
    const poller = new Poller({ client, store, jobs: [{ name: 'rebalancing:sindex', kind: 'rebalancing', indexId: 'sindex', intervalMs: 2_000 }], clock, onPoll: (p) => polled.push(p) });
    const [run] = poller.tick();
    while (fake.log.length === 0) await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 20));
    await poller.stop(10_000);
    await run;
    expect(fake.log.map((r) => r.path)).toEqual(['/indexes/sindex/rebalancing']);
    // Before, the pricing failure was logged and the announcement stored without the token's price.
    expect(store.lastEventSeq()).toBe(0);
    expect(store.jobStates()).toEqual([]);
    expect(polled).toEqual([]);
    store.close();
  });
});

describe('Poller.start', () => {
  it("sends node-cron's lines to its logger, never to the console in colour: a tick missed while the event loop was blocked is a debug line (CI: the demo printed one with terminal escapes)", async () => {
    const lines: { level: string; msg: string | undefined }[] = [];
    const at = (level: string) => (_obj: object, msg?: string) => lines.push({ level, msg });
    const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => logger };
    const fake = fakeTransport(() => ({ body: comp(1) }));
    const client = new IndexClient({ baseUrl: 'http://api.test/v1', adapter: fake.adapter, retries: 0 });
    const store = SnapshotStore.open(tempDbPath());
    const consoleLines: unknown[][] = [];
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((name) => vi.spyOn(console, name).mockImplementation((...args) => void consoleLines.push(args)));
    const poller = new Poller({ client, store, jobs: [{ name: 'composition:sindex', kind: 'composition', indexId: 'sindex', intervalMs: 60_000 }], logger });
    try {
      poller.start();
      // node-cron's own timers, on the real clock: block the loop past two of its ticks.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const until = Date.now() + 2_500;
      while (Date.now() < until);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    } finally {
      await poller.stop(1_000);
      for (const spy of spies) spy.mockRestore();
      store.close();
    }
    expect(consoleLines).toEqual([]);
    expect(lines.filter((l) => l.msg?.startsWith('node-cron: missed execution')).map((l) => l.level)).toContain('debug');
    expect(lines.filter((l) => l.msg?.startsWith('node-cron:') && l.level !== 'debug')).toEqual([]);
  }, 15_000);
});
