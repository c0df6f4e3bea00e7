import type Database from 'better-sqlite3';
import type { HistoryPoint } from '../contract/index.ts';

/** A closed range of epoch ms. */
export interface TimeRange {
  from: number;
  to: number;
}

/**
 * The cached points of one time, as the replay reads them: one row per time (a Buffer per
 * row cost more than everything else the replay does with it), every index's point in
 * index id order, their constituents still packed as `[tokenId, priceUsd, weight]` float64
 * end to end, in the machine's byte order (little-endian on every platform Node runs on).
 */
export interface HistoryMoment {
  readonly ts: number;
  readonly indexIds: readonly string[];
  readonly navs: readonly number[];
  /** Every point's constituents; point `i`'s are `values[ends[i - 1] ?? 0 .. ends[i])`. */
  readonly values: Float64Array;
  readonly ends: readonly number[];
}

const FIELDS = 3;

/** A blob of float64 as an array, without copying when the blob is aligned. */
function packedValues(packed: Buffer | null): Float64Array {
  if (!packed) return new Float64Array(0);
  if (packed.byteOffset % 8 === 0) return new Float64Array(packed.buffer, packed.byteOffset, packed.length / 8);
  return new Float64Array(Uint8Array.prototype.slice.call(packed).buffer);
}

/**
 * Backfilled history and what ranges of it we hold. Coverage is kept per dataset
 * (`history:1h`, `history:1d`, `rebalancing`) and index as merged closed ranges, so a
 * backfill asks the server only for what is missing, and resumes after the last page it
 * stored.
 */
export class HistoryTables {
  private readonly s: ReturnType<typeof prepare>;

  constructor(
    private readonly db: Database.Database,
    private readonly tokenId: (address: string, symbol: string) => number,
  ) {
    this.s = prepare(db);
  }

  /** Stores points (a point already held is replaced); the caller wraps this in a transaction with the coverage. */
  insertPoints(indexId: string, interval: string, points: readonly HistoryPoint[]): void {
    for (const p of points) {
      const cs = p.constituents ?? [];
      const packed = new Float64Array(cs.length * FIELDS);
      cs.forEach((c, i) => {
        packed[i * FIELDS] = this.tokenId(c.address, c.symbol);
        packed[i * FIELDS + 1] = c.price_usd;
        packed[i * FIELDS + 2] = c.weight;
      });
      this.s.insertPoint.run(interval, Date.parse(p.timestamp), indexId, p.nav, cs.length > 0 ? Buffer.from(packed.buffer) : null);
    }
  }

  coverage(dataset: string, indexId: string): TimeRange[] {
    return (this.s.coverage.all(dataset, indexId) as { from_ts: number; to_ts: number }[]).map((r) => ({ from: r.from_ts, to: r.to_ts }));
  }

  /** Records that [from, to] is held, merged with the ranges it touches or overlaps. */
  addCoverage(dataset: string, indexId: string, from: number, to: number): void {
    const merged = mergeRanges([...this.coverage(dataset, indexId), { from, to }]);
    this.s.clearCoverage.run(dataset, indexId);
    for (const r of merged) this.s.insertCoverage.run(dataset, indexId, r.from, r.to);
  }

  /** One index's points in [from, to], ascending: the history alone (a live bot's view adds its polls: SnapshotStore.historyBetween). */
  between(indexId: string, interval: string, from: number, to: number): { ts: number; nav: number }[] {
    return this.s.between.all(indexId, interval, from, to) as { ts: number; nav: number }[];
  }

  /** Timestamps of one index's points in [from, to], ascending. */
  timestamps(indexId: string, interval: string, from: number, to: number): number[] {
    return this.s.timestamps.pluck().all(indexId, interval, from, to) as number[];
  }

  /** How much of [from, to] one index holds, counted by SQLite: a long history is not loaded to count it. */
  held(indexId: string, interval: string, from: number, to: number, stepMs: number): HeldSpan {
    const span = this.s.heldSpan.get({ indexId, interval, from, to, step: stepMs }) as { points: number; first: number | null; last: number | null; phases: number };
    const { phases, ...held } = span;
    // Every point on one grid of the step, and as many as the span has room for: no hole to look for.
    const whole = held.points === 0 || (phases === 1 && (held.last! - held.first!) / stepMs + 1 === held.points);
    return { ...held, gaps: whole ? [] : (this.s.heldGaps.all({ indexId, interval, from, to, step: stepMs }) as TimeRange[]) };
  }

  /**
   * Points of the given indexes in [from, to], one moment per time, in time order. Moments
   * with the same indexes and constituent counts as the one before share its `indexIds` and
   * `ends` arrays (most of a history): neither parsed nor kept again.
   */
  *moments(indexIds: readonly string[], interval: string, from: number, to: number): Generator<HistoryMoment, void, undefined> {
    let idsText: string | undefined;
    let ids: string[] = [];
    let sizesText: string | undefined;
    let ends: number[] = [];
    for (const [ts, idsJson, navs, sizes, packed] of notBusy(this.db, this.s.replay).raw().iterate(interval, from, to, JSON.stringify(indexIds)) as IterableIterator<
      [number, string, string, string, Buffer | null]
    >) {
      if (idsJson !== idsText) {
        idsText = idsJson;
        ids = JSON.parse(idsJson) as string[];
      }
      if (sizes !== sizesText) {
        sizesText = sizes;
        const lengths = JSON.parse(sizes) as (number | null)[];
        let end = 0;
        ends = lengths.map((length) => (end += (length ?? 0) / 8));
      }
      yield { ts, indexIds: ids, navs: JSON.parse(navs) as number[], values: packedValues(packed), ends };
    }
  }

  /** Indexes with points at this interval, and the first and last point over them. */
  span(interval: string, indexIds?: readonly string[]): { indexIds: string[]; first: number | null; last: number | null } {
    const rows = this.s.span.all(interval) as { index_id: string; first: number; last: number }[];
    const held = rows.filter((r) => indexIds === undefined || indexIds.includes(r.index_id));
    return {
      indexIds: held.map((r) => r.index_id),
      first: held.length === 0 ? null : Math.min(...held.map((r) => r.first)),
      last: held.length === 0 ? null : Math.max(...held.map((r) => r.last)),
    };
  }

  /** Address and symbol of every token id, to unpack constituents. */
  tokens(): Map<number, { address: string; symbol: string }> {
    return new Map((this.s.tokens.all() as { id: number; address: string; symbol: string }[]).map((t) => [t.id, { address: t.address, symbol: t.symbol }]));
  }
}

/** Sorted, with ranges that overlap or touch (to + 1 >= next from) joined. */
export function mergeRanges(ranges: readonly TimeRange[]): TimeRange[] {
  const sorted = [...ranges].sort((a, b) => a.from - b.from);
  const out: TimeRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r.from <= last.to + 1) last.to = Math.max(last.to, r.to);
    else out.push({ ...r });
  }
  return out;
}

/** The parts of `want` that `have` does not cover. */
export function missingRanges(want: TimeRange, have: readonly TimeRange[]): TimeRange[] {
  const out: TimeRange[] = [];
  let cursor = want.from;
  for (const h of mergeRanges(have)) {
    if (h.to < cursor) continue;
    if (h.from > want.to) break;
    if (h.from > cursor) out.push({ from: cursor, to: h.from - 1 });
    cursor = Math.max(cursor, h.to + 1);
    if (cursor > want.to) break;
  }
  if (cursor <= want.to) out.push({ from: cursor, to: want.to });
  return out;
}

/**
 * Holes in a series that should have a point every `stepMs`: each pair of neighbours
 * further apart than `stepMs` is a gap from the first missing point to the last.
 */
export function findGaps(timestamps: readonly number[], stepMs: number): TimeRange[] {
  const gaps: TimeRange[] = [];
  for (let i = 1; i < timestamps.length; i++) {
    const prev = timestamps[i - 1]!;
    const next = timestamps[i]!;
    if (next - prev > stepMs) gaps.push({ from: prev + stepMs, to: next - stepMs });
  }
  return gaps;
}

export interface HeldSpan {
  points: number;
  first: number | null;
  last: number | null;
  /** Holes longer than a step, as the missing range (as `findGaps`). */
  gaps: TimeRange[];
}

function prepare(db: Database.Database) {
  return {
    insertPoint: db.prepare('INSERT OR REPLACE INTO history_points (interval, ts, index_id, nav, constituents) VALUES (?, ?, ?, ?, ?)'),
    coverage: db.prepare('SELECT from_ts, to_ts FROM backfill_coverage WHERE dataset = ? AND index_id = ? ORDER BY from_ts'),
    clearCoverage: db.prepare('DELETE FROM backfill_coverage WHERE dataset = ? AND index_id = ?'),
    insertCoverage: db.prepare('INSERT INTO backfill_coverage (dataset, index_id, from_ts, to_ts) VALUES (?, ?, ?, ?)'),
    timestamps: db.prepare('SELECT ts FROM history_points WHERE index_id = ? AND interval = ? AND ts >= ? AND ts <= ? ORDER BY ts'),
    between: db.prepare('SELECT ts, nav FROM history_points WHERE index_id = ? AND interval = ? AND ts >= ? AND ts <= ? ORDER BY ts'),
    heldSpan: db.prepare(
      'SELECT COUNT(*) AS points, MIN(ts) AS first, MAX(ts) AS last, COUNT(DISTINCT ts % @step) AS phases FROM history_points WHERE index_id = @indexId AND interval = @interval AND ts >= @from AND ts <= @to',
    ),
    heldGaps: db.prepare(
      `SELECT prev + @step AS "from", ts - @step AS "to" FROM (
         SELECT ts, LAG(ts) OVER (ORDER BY ts) AS prev FROM history_points WHERE index_id = @indexId AND interval = @interval AND ts >= @from AND ts <= @to
       ) WHERE ts - prev > @step ORDER BY ts`,
    ),
    // One row per time. The search walks the primary key (interval, ts, index_id), so each
    // time's points reach the aggregates in index id order, the same order in all four (a
    // test checks it, with statistics too). JSON renders a REAL with the digits that read back the same
    // double; group_concat copies a blob's bytes (a UTF-8 database) and skips a NULL one,
    // whose length is then null.
    replay: db.prepare(
      `SELECT ts, json_group_array(index_id), json_group_array(nav), json_group_array(length(constituents)), CAST(group_concat(constituents, '') AS BLOB)
       FROM history_points
       WHERE interval = ? AND ts >= ? AND ts <= ? AND index_id IN (SELECT value FROM json_each(?))
       GROUP BY ts ORDER BY ts`,
    ),
    tokens: db.prepare('SELECT id, address, symbol FROM token_ids'),
    span: db.prepare('SELECT index_id, MIN(ts) AS first, MAX(ts) AS last FROM history_points WHERE interval = ? GROUP BY index_id ORDER BY index_id'),
  };
}

/**
 * `statement`, or a copy of it while it is being iterated: two backtests interleaved on one
 * cache (Promise.all of runBacktest) each read through a statement of their own (trial 37:
 * every run but the first failed with "This statement is busy executing a query").
 */
export function notBusy(db: Database.Database, statement: Database.Statement): Database.Statement {
  return statement.busy ? db.prepare(statement.source) : statement;
}
