import type { IndexClient } from '../api/index.ts';
import { type HistoryInterval, INTERVAL_MS } from '../contract/index.ts';
import { type Clock, type Logger, silentLogger, systemClock } from '../core/index.ts';
import { type SnapshotStore, type TimeRange, findGaps, missingRanges } from '../store/index.ts';

/**
 * Rebalancing records are fetched from the first the server has, whatever `from`: a replay's
 * target weights at its start are those of the last rebalance that set each constituent's,
 * however long before (a trial's drift events differed by 81 between a cache with records
 * from 31 days before `from` and one a daemon had filled). They are few: a page or two a year.
 */
const REBALANCING_FROM = 0;

export interface BackfillOptions {
  client: IndexClient;
  store: SnapshotStore;
  indexes: readonly string[];
  from: number;
  to: number;
  /** @default '1h' */
  interval?: HistoryInterval;
  /** Items per page, as the server allows. @default 100 */
  pageSize?: number;
  /** @default systemClock */
  clock?: Clock;
  /** @default silentLogger */
  logger?: Logger;
  signal?: AbortSignal;
  onProgress?: (progress: BackfillProgress) => void;
}

export interface BackfillProgress {
  indexId: string;
  pagesDone: number;
  /** Pages still expected, refined as the server reports its totals. */
  pagesTotal: number;
  requests: number;
  elapsedMs: number;
  /** From the pace so far; undefined before the first page. */
  etaMs: number | undefined;
}

export interface IndexBackfill {
  indexId: string;
  /** Ranges asked of the server (what the cache did not hold yet). */
  fetched: TimeRange[];
  points: number;
  rebalances: number;
  /** The first and last point held in [from, to], if any. */
  firstPoint: number | undefined;
  lastPoint: number | undefined;
  /** Holes between the points held, after the backfill. */
  gaps: TimeRange[];
}

export interface BackfillReport {
  interval: HistoryInterval;
  from: number;
  to: number;
  indexes: IndexBackfill[];
  pages: number;
  requests: number;
  elapsedMs: number;
}

/**
 * Pulls the history and rebalancing records of `indexes` for [from, to] into the cache, at
 * low priority through the client's rate gate. Each page is stored with the coverage it
 * adds in one transaction, so an interrupted backfill resumes after its last stored page,
 * and a range the cache already holds is never fetched again.
 */
export async function backfill(o: BackfillOptions): Promise<BackfillReport> {
  const interval = o.interval ?? '1h';
  const step = INTERVAL_MS[interval];
  const pageSize = o.pageSize ?? 100;
  const clock = o.clock ?? systemClock;
  const log = o.logger ?? silentLogger;
  const to = Math.min(o.to, clock.now());
  if (!(o.from < to)) throw new RangeError(`Expected \`from\` before \`to\` (and before now), got ${new Date(o.from).toISOString()} .. ${new Date(to).toISOString()}`);
  const dataset = `history:${interval}`;
  const started = clock.now();
  const plan = o.indexes.map((indexId) => {
    const history = missingRanges({ from: o.from, to }, o.store.history.coverage(dataset, indexId));
    const rebalancing = missingRanges({ from: REBALANCING_FROM, to }, o.store.history.coverage('rebalancing', indexId));
    return { indexId, history, rebalancing };
  });
  const estimate = (r: TimeRange) => Math.max(1, Math.ceil((Math.floor((r.to - r.from) / step) + 1) / pageSize));
  const expected = new Map(plan.flatMap((p) => [...p.history.map((r) => [r, estimate(r)] as const), ...p.rebalancing.map((r) => [r, 1] as const)]));
  let pagesDone = 0;
  let requests = 0;
  const progress = (indexId: string) => {
    const pagesTotal = pagesDone + [...expected.values()].reduce((a, b) => a + b, 0);
    const elapsedMs = clock.now() - started;
    o.onProgress?.({ indexId, pagesDone, pagesTotal, requests, elapsedMs, etaMs: pagesDone === 0 ? undefined : (elapsedMs / pagesDone) * (pagesTotal - pagesDone) });
  };
  const pageDone = (range: TimeRange, indexId: string, total: number | undefined, received: number) => {
    pagesDone++;
    requests++;
    const left = total === undefined ? Math.max(0, expected.get(range)! - 1) : Math.ceil(Math.max(0, total - received) / pageSize);
    expected.set(range, left);
    progress(indexId);
  };

  const indexes: IndexBackfill[] = [];
  for (const { indexId, history, rebalancing } of plan) {
    let points = 0;
    let rebalances = 0;
    for (const range of history) {
      let received = 0;
      const pages = o.client.iterateHistory(indexId, { from: new Date(range.from), to: new Date(range.to), interval }, { priority: 'low', signal: o.signal }).pages();
      for await (const page of pages) {
        received += page.items.length;
        const last = page.items.at(-1);
        const complete = page.items.length === 0 || (page.total !== undefined ? received >= page.total : page.items.length < pageSize);
        o.store.transaction(() => {
          o.store.history.insertPoints(indexId, interval, page.items);
          // A page ends at its last point: a resume asks for what comes after it.
          if (complete) o.store.history.addCoverage(dataset, indexId, range.from, range.to);
          else if (last) o.store.history.addCoverage(dataset, indexId, range.from, Date.parse(last.timestamp));
        });
        points += page.items.length;
        pageDone(range, indexId, page.total, received);
      }
    }
    for (const range of rebalancing) {
      let received = 0;
      const pages = o.client.iterateRebalancing(indexId, { from: new Date(range.from), to: new Date(range.to) }, { priority: 'low', signal: o.signal }).pages();
      for await (const page of pages) {
        received += page.items.length;
        const fetchedAt = clock.now();
        o.store.transaction(() => {
          for (const r of page.items) o.store.upsertRebalance(r, fetchedAt);
        });
        rebalances += page.items.length;
        pageDone(range, indexId, page.total, received);
      }
      // Newest first: only the whole list covers the range.
      o.store.transaction(() => o.store.history.addCoverage('rebalancing', indexId, range.from, range.to));
    }
    const held = o.store.history.timestamps(indexId, interval, o.from, to);
    const gaps = findGaps(held, step);
    if (gaps.length > 0) log.warn({ indexId, gaps: gaps.map(describeRange) }, `${indexId}: the server's history has ${gaps.length} gap(s)`);
    indexes.push({ indexId, fetched: history, points, rebalances, firstPoint: held[0], lastPoint: held.at(-1), gaps });
  }
  return { interval, from: o.from, to, indexes, pages: pagesDone, requests, elapsedMs: clock.now() - started };
}

export function describeRange(r: TimeRange): string {
  return r.from === r.to ? new Date(r.from).toISOString() : `${new Date(r.from).toISOString()} .. ${new Date(r.to).toISOString()}`;
}
