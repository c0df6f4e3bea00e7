import { checkOptionRange } from '../core/index.ts';
import type { HistoryMoment, SnapshotStore } from '../store/index.ts';

/** A status change of a rebalance, as the feed showed it: the record, its status then, and when. */
export type RebalanceTransition = ReturnType<SnapshotStore['rebalanceTransitions']> extends Iterator<infer T> ? T : never;

/** Where a run reads the cached history it replays: the cache (each run reads it anew), or a {@link RecordedHistory}. */
export interface HistorySource {
  /** History points of the indexes in [from, to], one moment per time, in time order. */
  moments(indexIds: readonly string[], interval: string, from: number, to: number): Iterable<HistoryMoment>;
  /** Rebalance status changes of the indexes in [from, to], in time order. */
  transitions(indexIds: readonly string[], from: number, to: number): Generator<RebalanceTransition, void, undefined>;
}

/** The cache, read anew by each call. */
export function readEachTime(cache: SnapshotStore): HistorySource {
  return {
    moments: (indexIds, interval, from, to) => cache.history.moments(indexIds, interval, from, to),
    transitions: (indexIds, from, to) => cache.rebalanceTransitions(indexIds, from, to),
  };
}

/** Where a run starts reading the rebalancing feed: from the first record, to know the feed's state at its own start. */
export const FEED_START = Number.MIN_SAFE_INTEGER;

/** What {@link RecordedHistory.share} gives: plain data and shared memory, for a message to another thread. */
export interface SharedHistory {
  moments: [key: string, data: RecordingData][];
  transitions: [key: string, transitions: readonly RebalanceTransition[]][];
  bytes: number;
}

/** Packed values are copied into blocks of this many doubles (8 MiB), a moment's within one block. */
const BLOCK_DOUBLES = 2 ** 20;
/** What a kept moment costs beside its packed values: its time, place and navs. */
const MOMENT_OVERHEAD_BYTES = 64;
/** What a kept status change costs, about: its parsed record. */
const TRANSITION_BYTES = 1_024;

/** A kept range as plain data: what a message carries to another thread (the blocks are shared memory there, not copies). */
export interface RecordingData {
  ts: number[];
  navs: (readonly number[])[];
  /** Per moment: its block, where its values start in it, and which of `shapes` it has. */
  block: number[];
  start: number[];
  shape: number[];
  /** Each block over a SharedArrayBuffer. */
  blocks: Float64Array[];
  /** The distinct `indexIds` and `ends` pairs: a history has few, shared by long runs of moments. */
  shapes: { indexIds: readonly string[]; ends: readonly number[] }[];
  bytes: number;
}

/**
 * A range of history held in a few large blocks rather than as one object per moment: a
 * collector walks a handful of typed arrays, not tens of thousands of objects and buffers.
 */
class Recording {
  private used = BLOCK_DOUBLES;

  constructor(readonly data: RecordingData = { ts: [], navs: [], block: [], start: [], shape: [], blocks: [], shapes: [], bytes: 0 }) {}

  add(m: HistoryMoment): void {
    const d = this.data;
    let shape = d.shapes.length - 1;
    const last = d.shapes[shape];
    if (last?.indexIds !== m.indexIds || last.ends !== m.ends) shape = d.shapes.push({ indexIds: m.indexIds, ends: m.ends }) - 1;
    const length = m.values.length;
    // A first moment with no constituents still needs a block to stand in.
    if (d.blocks.length === 0 || this.used + length > BLOCK_DOUBLES) {
      // Shared memory, so that a sweep's threads replay one copy.
      d.blocks.push(new Float64Array(new SharedArrayBuffer(8 * Math.max(BLOCK_DOUBLES, length))));
      this.used = 0;
    }
    d.blocks.at(-1)!.set(m.values, this.used);
    d.ts.push(m.ts);
    d.navs.push(m.navs);
    d.block.push(d.blocks.length - 1);
    d.start.push(this.used);
    d.shape.push(shape);
    this.used += length;
    d.bytes += 8 * (length + m.navs.length) + MOMENT_OVERHEAD_BYTES;
  }

  /** Lets the unused end of the last block go: a range read in pieces would otherwise keep up to a block's room per piece. */
  trim(): RecordingData {
    const d = this.data;
    const last = d.blocks.at(-1);
    if (last && this.used < last.length) {
      const exact = new Float64Array(new SharedArrayBuffer(8 * this.used));
      exact.set(last.subarray(0, this.used));
      d.blocks[d.blocks.length - 1] = exact;
      this.used = BLOCK_DOUBLES;
    }
    return d;
  }

  *moments(): Generator<HistoryMoment, void, undefined> {
    const d = this.data;
    for (let i = 0; i < d.ts.length; i++) {
      const { indexIds, ends } = d.shapes[d.shape[i]!]!;
      const start = d.start[i]!;
      yield { ts: d.ts[i]!, indexIds, navs: d.navs[i]!, values: d.blocks[d.block[i]!]!.subarray(start, start + (ends.at(-1) ?? 0)), ends };
    }
  }
}

/**
 * What the pieces of one range may take in all, counted in KiB by every thread that reads one
 * (each piece read apart against the whole budget could hold a multiple of it before the sum
 * was known).
 */
export interface SharedBudget {
  limitBytes: number;
  /** KiB taken so far, over the threads: an Int32Array of one over a SharedArrayBuffer. */
  usedKiB: Int32Array;
}

export function sharedBudget(limitBytes: number): SharedBudget {
  return { limitBytes, usedKiB: new Int32Array(new SharedArrayBuffer(4)) };
}

/** How often a piece's reader adds what it took to the shared count. */
const BUDGET_STEP_BYTES = 1 << 20;

/**
 * The history points of `indexIds` in [from, to], as a {@link RecordedHistory} keeps them:
 * one piece of a range that several threads read at once. 'over budget' as soon as the pieces
 * read take more than `budget` between them (give a budget of its own to read one range alone).
 */
export function recordMoments(cache: SnapshotStore, indexIds: readonly string[], interval: string, from: number, to: number, budget: SharedBudget): RecordingData | 'over budget' {
  const recording = new Recording();
  // What this piece has added to the shared count; the rest of its bytes are added a step at a time.
  let counted = 0;
  const count = () => {
    const kib = Math.floor((recording.data.bytes - counted) / 1024);
    counted += kib * 1024;
    Atomics.add(budget.usedKiB, 0, kib);
  };
  // Checked at every moment, as a read alone stops at once (the other pieces' part as last counted).
  const over = () => Atomics.load(budget.usedKiB, 0) * 1024 + recording.data.bytes - counted > budget.limitBytes;
  for (const m of cache.history.moments(indexIds, interval, from, to)) {
    recording.add(m);
    if (recording.data.bytes - counted >= BUDGET_STEP_BYTES) count();
    if (over()) return 'over budget';
  }
  count();
  return recording.trim();
}

/** Pieces of one range read apart ({@link recordMoments}), in time order, as one recording: the blocks are shared, not copied. */
export function joinRecordings(pieces: readonly RecordingData[]): RecordingData {
  const whole: RecordingData = { ts: [], navs: [], block: [], start: [], shape: [], blocks: [], shapes: [], bytes: 0 };
  for (const piece of pieces) {
    const blocks = whole.blocks.length;
    const shapes = whole.shapes.length;
    whole.blocks.push(...piece.blocks);
    whole.shapes.push(...piece.shapes);
    for (let i = 0; i < piece.ts.length; i++) {
      whole.ts.push(piece.ts[i]!);
      whole.navs.push(piece.navs[i]!);
      whole.block.push(piece.block[i]! + blocks);
      whole.start.push(piece.start[i]!);
      whole.shape.push(piece.shape[i]! + shapes);
    }
    whole.bytes += piece.bytes;
  }
  return whole;
}

/**
 * The history a sweep thread's runs replay, kept from the first run that reads it. Every run
 * of a sweep replays the same range, and reading and decoding it from SQLite was about half
 * of a run; as freqtrade's hyperopt runs every epoch on data loaded once, the later runs take
 * the moments from memory, the same values in the same order. A range is kept only if it
 * fits in what is left of `budgetBytes`; a larger one is read from the cache by every run,
 * as it would be without this.
 */
export class RecordedHistory implements HistorySource {
  private readonly kept = new Map<string, Recording | 'over budget'>();
  private readonly keptTransitions = new Map<string, readonly RebalanceTransition[] | 'over budget'>();
  private usedBytes = 0;

  /** @param budgetBytes What the kept ranges may take in all, from 0 (keep nothing) to 2^40. */
  constructor(
    private readonly cache: SnapshotStore,
    private readonly budgetBytes: number,
  ) {
    checkOptionRange('budgetBytes', budgetBytes, { min: 0, max: 2 ** 40, maxText: '2^40' });
  }

  /**
   * What another thread's `RecordedHistory` starts from ({@link RecordedHistory.fromShared}):
   * the kept ranges, their values in shared memory, so that every thread of a sweep replays
   * one copy.
   */
  share(): SharedHistory {
    const kept = <T>(map: Map<string, T | 'over budget'>) => [...map].filter((e): e is [string, T] => e[1] !== 'over budget');
    return { moments: kept(this.kept).map(([key, r]) => [key, r.data]), transitions: kept(this.keptTransitions), bytes: this.usedBytes };
  }

  /** The ranges another thread kept and shared; a range it did not keep is read from `cache` by every run, as without a `RecordedHistory`. */
  static fromShared(cache: SnapshotStore, shared: SharedHistory): RecordedHistory {
    const history = new RecordedHistory(cache, 0);
    for (const [key, data] of shared.moments) history.kept.set(key, new Recording(data));
    for (const [key, transitions] of shared.transitions) history.keptTransitions.set(key, transitions);
    history.usedBytes = shared.bytes;
    return history;
  }

  /**
   * Reads and keeps, ahead of the runs, all a run of `indexIds` over [from, to] reads: the
   * history points, the rebalance status changes up to `from` (the feed as a run starts) and
   * those after. Stops reading as soon as the budget is passed; says whether all was kept.
   */
  keep(indexIds: readonly string[], interval: string, from: number, to: number): boolean {
    const kept = this.kept.get(momentsKey(indexIds, interval, from, to));
    if (kept === 'over budget') return false;
    if (kept) return this.keepTransitions(indexIds, from, to);
    const points = recordMoments(this.cache, indexIds, interval, from, to, sharedBudget(this.budgetBytes - this.usedBytes));
    if (points !== 'over budget') return this.keepRead(indexIds, interval, from, to, points);
    this.kept.set(momentsKey(indexIds, interval, from, to), 'over budget');
    return false;
  }

  /**
   * Keeps what {@link keep} does, the history points read already (in pieces, on other
   * threads); says whether all was kept. A sweep's own: its data's layout is not a public one.
   * @internal
   */
  keepRead(indexIds: readonly string[], interval: string, from: number, to: number, points: RecordingData): boolean {
    const key = momentsKey(indexIds, interval, from, to);
    if (this.usedBytes + points.bytes > this.budgetBytes) {
      this.kept.set(key, 'over budget');
      return false;
    }
    this.kept.set(key, new Recording(points));
    this.usedBytes += points.bytes;
    return this.keepTransitions(indexIds, from, to);
  }

  /** The rebalance status changes up to `from` (the feed as a run starts) and those after, up to `to`. */
  private keepTransitions(indexIds: readonly string[], from: number, to: number): boolean {
    for (const [start, end] of [
      [FEED_START, from],
      [from, to],
    ] as const) {
      for (const _ of this.transitions(indexIds, start, end)) if (this.keptTransitions.get(transitionsKey(indexIds, start, end)) === 'over budget') return false;
    }
    return true;
  }

  moments(indexIds: readonly string[], interval: string, from: number, to: number): Iterable<HistoryMoment> {
    const key = momentsKey(indexIds, interval, from, to);
    const kept = this.kept.get(key);
    if (kept !== undefined && kept !== 'over budget') return kept.moments();
    const read = this.cache.history.moments(indexIds, interval, from, to);
    return kept === 'over budget' ? read : this.record(key, read);
  }

  /** The records are parsed once and shared by the runs: nothing changes them (the detector is pure, and what it gives strategies it freezes). */
  transitions(indexIds: readonly string[], from: number, to: number): Generator<RebalanceTransition, void, undefined> {
    const key = transitionsKey(indexIds, from, to);
    const kept = this.keptTransitions.get(key);
    if (kept !== undefined && kept !== 'over budget') return each(kept);
    const read = this.cache.rebalanceTransitions(indexIds, from, to);
    return kept === 'over budget' ? read : this.recordTransitions(key, read);
  }

  /** Kept bytes, roughly: what the kept ranges hold. */
  get bytes(): number {
    return this.usedBytes;
  }

  private *record(key: string, read: Iterable<HistoryMoment>): Generator<HistoryMoment, void, undefined> {
    let recording: Recording | undefined = new Recording();
    for (const m of read) {
      if (recording) {
        recording.add(m);
        if (this.usedBytes + recording.data.bytes > this.budgetBytes) {
          recording = undefined;
          this.kept.set(key, 'over budget');
        }
      }
      yield m;
    }
    // Only a range read to its end is kept: a run that stopped early (a handler threw) leaves nothing.
    if (recording) {
      this.kept.set(key, recording);
      this.usedBytes += recording.data.bytes;
    }
  }

  private *recordTransitions(key: string, read: Iterable<RebalanceTransition>): Generator<RebalanceTransition, void, undefined> {
    let recording: RebalanceTransition[] | undefined = [];
    for (const t of read) {
      if (recording) {
        recording.push(t);
        if (this.usedBytes + recording.length * TRANSITION_BYTES > this.budgetBytes) {
          recording = undefined;
          this.keptTransitions.set(key, 'over budget');
        }
      }
      yield t;
    }
    if (recording) {
      this.keptTransitions.set(key, recording);
      this.usedBytes += recording.length * TRANSITION_BYTES;
    }
  }
}

const momentsKey = (indexIds: readonly string[], interval: string, from: number, to: number) => JSON.stringify([indexIds, interval, from, to]);
const transitionsKey = (indexIds: readonly string[], from: number, to: number) => JSON.stringify([indexIds, from, to]);

/** A kept list as the cache's generator gives it (one that can be ended early). */
function* each<T>(items: readonly T[]): Generator<T, void, undefined> {
  yield* items;
}
