import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { buildReport, renderTable, reportJson, runBacktest } from '../../src/backtest/index.ts';
import { BacktestDataError, silentLogger } from '../../src/core/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { loadStrategyModule, withParams } from '../../src/strategy/index.ts';
import type { Rebalance } from '../../src/contract/index.ts';
import { A, B, H, T0, buildCache } from '../helpers/backtest-cache.ts';
import { captureLogger } from '../helpers/fake-transport.ts';

const fixture = (name: string) => new URL(`../fixtures/backtest/${name}.ts`, import.meta.url).pathname;
async function strategy(name: string, params: unknown = {}) {
  const file = fixture(name);
  return withParams(await loadStrategyModule(file), file, params);
}

describe('backtest replay', () => {
  it('replays rebalances at their own times through the live detector, and trades at them', async () => {
    const cache = SnapshotStore.open(buildCache(), { readonly: true });
    const r = await runBacktest({ cache, strategy: await strategy('announce-buyer'), indexes: ['x', 'y'], from: T0, to: T0 + 119 * H, feeBps: 0, slippageBps: 0, logger: silentLogger });
    expect(r.eventCounts['rebalance.announced']).toBe(1);
    // Seen by the feed and by the composition: one event, as live.
    expect(r.eventCounts['rebalance.completed']).toBe(1);
    expect(r.eventCounts['performance.updated']).toBe(2 * 119);
    expect(r.fills.map((f) => [f.side, (f.at - T0) / H, f.price, f.eventId])).toEqual([
      ['buy', 30, 10, 'rebalance.announced:x:rb_x_1'],
      ['sell', 60, 10, 'rebalance.completed:x:rb_x_1'],
    ]);
    expect(r.metrics.trades).toBe(2);
    // Daily closes: the start, each 00:00 UTC crossed (as of the item at or before it), the end.
    expect(r.equity.map((p) => (p.t - T0) / H)).toEqual([0, 24, 48, 72, 96, 119]);
    expect(r.equity[0]).toEqual({ t: T0, value: 10_000, exposure: 0 });
    const x = r.navs.find((n) => n.indexId === 'x')!.points;
    expect(x.map(([t]) => (t - T0) / H)).toEqual([0, 24, 48, 72, 96, 119]);
    // Hour 96 is after A doubled at hour 80: the close at 96 is that hour's value, not the previous day's.
    expect(x[4]![1]).toBeCloseTo(20 * 0.6 + (5 + (96 % 7) * 0.01) * 0.4, 12);
    expect(x[3]![1]).toBeCloseTo(10 * 0.6 + (5 + (72 % 7) * 0.01) * 0.4, 12);
    expect(r.benchmarks.map((b) => b.indexId)).toEqual(['x', 'y']);
    cache.close();
  });

  it('reports refused orders with their reason and event, and what is held at the end at its last price', async () => {
    const cache = SnapshotStore.open(buildCache(), { readonly: true });
    const r = await runBacktest({ cache, strategy: await strategy('reject-and-hold'), indexes: ['x'], from: T0, to: T0 + 119 * H, feeBps: 0, slippageBps: 0 });
    expect(r.rejections.map((x) => [x.code, x.side, x.instrument, (x.at - T0) / H, x.eventId])).toEqual([
      ['no_price', 'buy', `token:${'Z'.repeat(44)}`, 30, 'rebalance.announced:x:rb_x_1'],
      ['insufficient_cash', 'buy', `token:${A}`, 30, 'rebalance.announced:x:rb_x_1'],
      ['insufficient_position', 'sell', `token:${A}`, 30, 'rebalance.announced:x:rb_x_1'],
    ]);
    expect(r.rejections[0]!.reason).toMatch(/^no price for token:Z+ at 2025-03-02T06:00:00.000Z$/);
    // 100 USD of AAA at 10, worth 20 at the last point (its price doubled at hour 80).
    expect(r.openPositions).toEqual([{ instrument: `token:${A}`, quantity: 10, costUsd: 100, price: 20 }]);
    cache.close();
  });

  it('never shows a strategy data after its simulated now, and one that would profit from the future cannot', async () => {
    const path = buildCache();
    const cache = SnapshotStore.open(path, { readonly: true });
    const r = await runBacktest({ cache, strategy: await strategy('peeker'), indexes: ['x'], from: T0, to: T0 + 119 * H, logger: silentLogger });
    expect(r.parked.count).toBe(0);
    // It ran at every performance event, and none of its probes ever saw the future or a value other than the event's.
    expect(r.finalState).toEqual({ checks: 119 });
    expect(r.fills).toEqual([]);
    expect(r.metrics.totalReturn).toBe(0);
    cache.close();
    // Its state lived in the backtest's own database: the cache holds no strategy state, events or cursors.
    const after = SnapshotStore.open(path);
    expect(after.strategies.stateEntries('peeker').size).toBe(0);
    expect(after.lastEventSeq()).toBe(0);
    expect(after.cursors()).toEqual([]);
    after.close();
  });

  it('gives byte-identical report.json for the same cache, strategy and params', async () => {
    const cache = SnapshotStore.open(buildCache(), { readonly: true });
    const run = async (indexes = ['x', 'y']) =>
      reportJson(buildReport(await runBacktest({ cache, strategy: await strategy('announce-buyer', { notionalUsd: 250 }), indexes, from: T0, to: T0 + 119 * H })));
    const [a, b] = [await run(), await run()];
    expect(a).toBe(b);
    // The indexes are a set: listed in another order, or one twice, it is the same run (found by a trial: another run id).
    expect(await run(['y', 'x', 'y'])).toBe(a);
    const report = JSON.parse(a);
    expect(report.fills.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(report.runId).toMatch(/^bt_/);
    const other = reportJson(buildReport(await runBacktest({ cache, strategy: await strategy('announce-buyer', { notionalUsd: 50 }), indexes: ['x', 'y'], from: T0, to: T0 + 119 * H })));
    expect(JSON.parse(other).fills.hash).not.toBe(report.fills.hash);
    expect(JSON.parse(other).runId).not.toBe(report.runId);
    // Runs interleaved on one cache (Promise.all): each reads through its own statement, to the same reports (trial 37: "This statement is busy").
    expect(await Promise.all([run(), run(['y', 'x']), run()])).toEqual([a, a, a]);
    cache.close();
  });

  it('gives runs of the same strategy, params and settings over two different caches two run ids (found by a trial: one report overwrote the other)', async () => {
    const same = { indexes: ['x', 'y'], from: T0, to: T0 + 119 * H };
    const path = buildCache();
    const first = SnapshotStore.open(path, { readonly: true });
    const a = await runBacktest({ cache: first, strategy: await strategy('announce-buyer', { notionalUsd: 250 }), ...same });
    first.close();
    // The same range held, the first index's values scaled (its returns, and so every figure, unchanged): a cache filled another way.
    const db = new Database(path);
    db.prepare("UPDATE history_points SET nav = nav * 1.5 WHERE index_id = 'x'").run();
    db.close();
    const second = SnapshotStore.open(path, { readonly: true });
    const b = await runBacktest({ cache: second, strategy: await strategy('announce-buyer', { notionalUsd: 250 }), ...same });
    const again = await runBacktest({ cache: second, strategy: await strategy('announce-buyer', { notionalUsd: 250 }), ...same });
    second.close();
    expect(b.settings).toEqual(a.settings);
    expect(b.metrics).toEqual(a.metrics);
    expect(b.runId).not.toBe(a.runId);
    expect(again.runId).toBe(b.runId);
  });

  it('takes the target of a constituent that no rebalance completed before the start names from the first point, not 0 (trial 34)', async () => {
    const path = buildCache();
    const store = SnapshotStore.open(path);
    // Completed at hour 5, before the run starts at hour 20; it names A only.
    const earlier = {
      id: 'rb_x_0',
      index_id: 'x',
      status: 'completed',
      announced_at: new Date(T0 + H).toISOString(),
      effective_at: new Date(T0 + 5 * H).toISOString(),
      completed_at: new Date(T0 + 5 * H).toISOString(),
      reason: 'scheduled',
      changes: [{ address: A, symbol: 'AAA', action: 'increase', old_weight: 0.45, new_weight: 0.51 }],
    } as Rebalance;
    store.transaction(() => store.upsertRebalance(earlier, T0 + 200 * H));
    store.close();
    const cache = SnapshotStore.open(path, { readonly: true });
    const r = await runBacktest({ cache, strategy: await strategy('target-watcher'), indexes: ['x'], from: T0 + 20 * H, to: T0 + 119 * H });
    cache.close();
    // Before: BBB's target was 0 for the whole run, so it sat past the threshold from the first point and never drifted.
    // AAA's from the record, BBB's from the first point (0.5).
    expect(r.alertList[0]!.data).toEqual({ targets: { AAA: 0.51, BBB: 0.5 } });
    // Weights and targets agree to within the threshold throughout (hour 60's rebalance moves both): no drift.
    expect(r.alertList.filter((a) => a.message === 'drift')).toEqual([]);
  });

  it('refuses a range given as anything but epoch ms, naming the option (a date string read as "no history in that range")', async () => {
    const cache = SnapshotStore.open(buildCache(), { readonly: true });
    const options = { cache, strategy: await strategy('announce-buyer'), indexes: ['x'], from: T0, to: T0 + 119 * H };
    await expect(runBacktest({ ...options, from: '2025-03-01' as unknown as number })).rejects.toThrow(
      "Expected `from` to be a time in epoch ms (Date.parse('2026-06-01') or a Date's getTime() gives one), got `2025-03-01` (string)",
    );
    await expect(runBacktest({ ...options, to: Number.NaN })).rejects.toThrow(/^Expected `to` to be a time in epoch ms .*got `NaN` \(number\)$/);
    // Trial 36: a NaN fee ran the whole replay and parked every event as the strategy's failure; a negative cash and no indexes ran.
    for (const [bad, message] of [
      [{ feeBps: Number.NaN }, 'Expected `feeBps` to be a number from 0 to 1000, got `NaN`'],
      [{ slippageBps: -500 }, 'Expected `slippageBps` to be a number from 0 to 1000, got `-500`'],
      [{ cash: -5 }, 'Expected `cash` to be a number above 0 and up to 1000000000000, got `-5`'],
      [{ cash: 0 }, 'Expected `cash` to be a number above 0 and up to 1000000000000, got `0`'],
      [{ driftThreshold: 2 }, 'Expected `driftThreshold` to be a number above 0 and up to 1, got `2`'],
      [{ maxGapMs: 0.5 }, 'Expected `maxGapMs` to be an integer from 1 to 31622400000, got `0.5`'],
      [{ indexes: [] }, 'Expected `indexes` to be a list of one or more index ids, got `[]`'],
      [{ interval: '5m' }, 'Expected `interval` to be one of 1h, 1d, got `5m`'],
      [{ from: T0 + 10 * H, to: T0 }, 'Expected `from` before `to`'],
      [{ from: 'x' }, 'Expected `from` to be a time in epoch ms'],
    ] as const) {
      const e = await runBacktest({ ...options, ...(bad as object) }).catch((x: unknown) => x);
      expect(e, JSON.stringify(bad)).toBeInstanceOf(BacktestDataError);
      expect((e as BacktestDataError).code).toBe('BACKTEST_OPTIONS');
      expect((e as Error).message).toContain(message);
    }
    cache.close();
  });

  it('refuses to run past a gap larger than the threshold unless allowed, and reports it', async () => {
    const cache = SnapshotStore.open(buildCache({ skipHours: [40, 50] }), { readonly: true });
    const options = { cache, strategy: await strategy('announce-buyer'), indexes: ['x'], from: T0, to: T0 + 119 * H };
    const e = await runBacktest(options).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BacktestDataError);
    expect((e as BacktestDataError).code).toBe('BACKTEST_GAP');
    expect((e as Error).message).toContain('has 1 hole(s) longer than 6 h (2025-03-02T16:00:00.000Z .. 2025-03-03T02:00:00.000Z (x))');
    expect((e as Error).message).toContain('--allow-gaps');
    const r = await runBacktest({ ...options, allowGaps: true });
    expect(r.coverage[0]!.gaps).toEqual([{ from: T0 + 40 * H, to: T0 + 50 * H }]);
    expect((await runBacktest({ ...options, maxGapMs: 12 * H })).coverage[0]!.gaps).toHaveLength(1);
    cache.close();
  });

  it('counts the holes before the first cached point and after the last as gaps; allowed, strategy and buy-and-hold cover the same cached range', async () => {
    const cache = SnapshotStore.open(buildCache(), { readonly: true });
    // Ten days before the first point (T0) and two days after the last (T0 + 119 h).
    const options = { cache, strategy: await strategy('announce-buyer'), indexes: ['x', 'y'], from: T0 - 240 * H, to: T0 + 167 * H, feeBps: 0, slippageBps: 0 };
    const e = await runBacktest(options).catch((x: unknown) => x);
    expect((e as BacktestDataError).code).toBe('BACKTEST_GAP');
    // Each hole once, with the indexes that share it, as the warning of a run past it says it (trial 37: "2 gap(s)" here, "1 hole(s)" there).
    expect((e as Error).message).toContain('has 2 hole(s) longer than 6 h (2025-02-19T00:00:00.000Z .. 2025-02-28T23:00:00.000Z (x, y); 2025-03-06T00:00:00.000Z .. 2025-03-07T23:00:00.000Z (x, y))');
    const r = await runBacktest({ ...options, allowGaps: true });
    expect(r.coverage[0]!.gaps).toEqual([
      { from: T0 - 240 * H, to: T0 - H },
      { from: T0 + 120 * H, to: T0 + 167 * H },
    ]);
    expect(r.requested).toEqual({ from: T0 - 240 * H, to: T0 + 167 * H });
    expect([r.settings.from, r.settings.to]).toEqual([T0, T0 + 119 * H]);
    expect(r.equity[0]!.t).toBe(T0);
    expect(r.equity.at(-1)!.t).toBe(T0 + 119 * H);
    for (const b of r.benchmarks) expect(b.metrics.days).toBe(r.metrics.days);
    // The rebalance of hour 30 trades at cached prices: nothing refused for want of a price.
    expect(r.rejections.filter((x) => x.code === 'no_price')).toEqual([]);
    // The same figures as a run asked for the cached range itself, and the report says why.
    const exact = await runBacktest({ ...options, from: T0, to: T0 + 119 * H });
    expect(r.fillsHash).toBe(exact.fillsHash);
    expect(r.metrics).toEqual(exact.metrics);
    expect(exact.requested).toBeNull();
    const report = buildReport(r);
    expect(report.settings.requested).toEqual({ from: '2025-02-19T00:00:00.000Z', to: '2025-03-07T23:00:00.000Z' });
    expect(report.warnings).toContain(
      'the cache holds 2025-03-01T00:00 .. 2025-03-05T23:00 of the requested 2025-02-19T00:00 .. 2025-03-07T23:00: the strategy and buy-and-hold figures cover 2025-03-01T00:00 .. 2025-03-05T23:00 only',
    );
    cache.close();
  });

  it('an index listed later than the others is no gap where a backfill covered its start, and is one where none did', async () => {
    const path = buildCache();
    const store = SnapshotStore.open(path);
    // z is listed at hour 48: a backfill from T0 found nothing before then.
    const late = Array.from({ length: 72 }, (_, i) => ({
      timestamp: new Date(T0 + (48 + i) * H).toISOString(),
      nav: 1 + i / 100,
      constituents: [{ address: B, symbol: 'BBB', price_usd: 5, weight: 1 }],
    }));
    store.transaction(() => store.history.insertPoints('z', '1h', late));
    store.close();
    const options = { strategy: await strategy('announce-buyer'), indexes: ['x', 'z'], from: T0, to: T0 + 119 * H };
    const unbackfilled = SnapshotStore.open(path, { readonly: true });
    const e = await runBacktest({ ...options, cache: unbackfilled }).catch((x: unknown) => x);
    unbackfilled.close();
    expect((e as BacktestDataError).code).toBe('BACKTEST_GAP');
    expect((e as Error).message).toContain('2025-03-01T00:00:00.000Z .. 2025-03-02T23:00:00.000Z (z)');
    const writable = SnapshotStore.open(path);
    writable.transaction(() => writable.history.addCoverage('history:1h', 'z', T0, T0 + 119 * H));
    writable.close();
    const cache = SnapshotStore.open(path, { readonly: true });
    const r = await runBacktest({ ...options, cache });
    expect(r.coverage.find((c) => c.indexId === 'z')!.gaps).toEqual([]);
    expect([r.settings.from, r.settings.to]).toEqual([T0, T0 + 119 * H]);
    cache.close();
  });

  it('names the backfill to run when the cache has no history for the range', async () => {
    const cache = SnapshotStore.open(buildCache(), { readonly: true });
    const s = await strategy('announce-buyer');
    const e = await runBacktest({ cache, strategy: s, indexes: ['x', 'nope'], from: T0, to: T0 + 10 * H }).catch((x: unknown) => x);
    expect((e as BacktestDataError).code).toBe('BACKTEST_NO_DATA');
    // Whole days that cover the range, --to after --from: the same day twice is refused by backfill (trial 34).
    expect((e as Error).message).toContain('indexbot backfill --from 2025-03-01 --to 2025-03-02 --interval 1h --indexes nope');
    const short = await runBacktest({ cache, strategy: s, indexes: ['x'], from: T0 + 10 * 60_000, to: T0 + 40 * 60_000 }).catch((x: unknown) => x);
    expect((short as Error).message).toBe('2025-03-01T00:10 .. 2025-03-01T00:40 is shorter than one 1h interval and holds no 1h point: widen the range, or use a shorter --interval');
    cache.close();
  });
});

describe('report', () => {
  it('names the strategy file relative to the working directory and holds no wall-clock time', async () => {
    const cache = SnapshotStore.open(buildCache(), { readonly: true });
    const report = buildReport(await runBacktest({ cache, strategy: await strategy('announce-buyer'), indexes: ['x'], from: T0, to: T0 + 119 * H }));
    expect(report.strategy.file).toBe('test/fixtures/backtest/announce-buyer.ts');
    expect(JSON.stringify(report)).not.toContain(new Date().toISOString().slice(0, 10));
    expect(report.strategy.sourceHash).toHaveLength(64);
    cache.close();
  });

  it('logs the first five failed events of a strategy failing on every event as skipped, then one line, and counts them all in the result', async () => {
    const cache = SnapshotStore.open(buildCache(), { readonly: true });
    const { logger, lines } = captureLogger();
    const strategy = withParams(await loadStrategyModule(fixture('fail-better')), fixture('fail-better'), { fail: true });
    const r = await runBacktest({ cache, strategy, indexes: ['x'], from: T0, to: T0 + 119 * H, logger });
    cache.close();
    const msgs = lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(r.parked.count).toBe(118);
    expect(msgs.filter((m) => m === 'strategy handler failed')).toHaveLength(5);
    // Nothing retries a backtest's failed events: its log says skipped, as its report does.
    expect(msgs.filter((m) => m === 'event skipped for this strategy; it goes on with the next')).toHaveLength(5);
    expect(msgs.filter((m) => m === 'further failed events are skipped and counted, not logged')).toHaveLength(1);
    expect(msgs.filter((m) => m.includes('parked'))).toEqual([]);
  });

  it("prints each failed event of the table's warning on one line, with where it threw (trial 28)", async () => {
    const cache = SnapshotStore.open(buildCache(), { readonly: true });
    const strategy = withParams(await loadStrategyModule(fixture('fail-better')), fixture('fail-better'), { fail: true });
    const table = renderTable(buildReport(await runBacktest({ cache, strategy, indexes: ['x'], from: T0, to: T0 + 119 * H })));
    cache.close();
    // The range to the minute, as given (trial 28: --from 12:30 read as the day).
    expect(table.split('\n')[0]).toMatch(/^fail-better 2025-03-01 00:00 \.\. 2025-03-05 23:00 \(1h\), run /);
    const warning = table.split('\n').filter((l) => l.startsWith('warning:'));
    expect(warning).toHaveLength(1);
    expect(table).not.toMatch(/^\s+at /m);
    // Each failure: the event, the error's first line, and the strategy's own line that threw.
    expect(warning[0]).toMatch(/performance\.updated:x:\S+: Error: broken on purpose, at test\/fixtures\/backtest\/fail-better\.ts:\d+:\d+/);
  });
});
