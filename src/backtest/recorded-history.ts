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

/** Packed values are copied into blocks of this many doubles (8 MiB), a moment's within one block. */
const BLOCK_DOUBLES = 2 ** 20;
/** What a kept moment costs beside its packed values: its time, place and navs. */
const MOMENT_OVERHEAD_BYTES = 64;
/** What a kept status change costs, about: its parsed record. */
const TRANSITION_BYTES = 1_024;

/**
 * A range of history held in a few large blocks rather than as one object per moment: a
 * collector walks a handful of typed arrays, not tens of thousands of objects and buffers.
 */
class Recording {
  readonly ts: number[] = [];
  readonly navs: (readonly number[])[] = [];
  /** Per moment: its block, where its values start in it, and which of `shapes` it has. */
  readonly block: number[] = [];
  readonly start: number[] = [];
  readonly shape: number[] = [];
  readonly blocks: Float64Array[] = [];
  /** The distinct `indexIds` and `ends` pairs: a history has few, shared by long runs of moments. */
  readonly shapes: { indexIds: readonly string[]; ends: readonly number[] }[] = [];
  private used = BLOCK_DOUBLES;
  bytes = 0;

  add(m: HistoryMoment): void {
    let shape = this.shapes.length - 1;
    const last = this.shapes[shape];
    if (last?.indexIds !== m.indexIds || last.ends !== m.ends) shape = this.shapes.push({ indexIds: m.indexIds, ends: m.ends }) - 1;
    const length = m.values.length;
    if (this.used + length > BLOCK_DOUBLES) {
      this.blocks.push(new Float64Array(Math.max(BLOCK_DOUBLES, length)));
      this.used = 0;
    }
    this.blocks.at(-1)!.set(m.values, this.used);
    this.ts.push(m.ts);
    this.navs.push(m.navs);
    this.block.push(this.blocks.length - 1);
    this.start.push(this.used);
    this.shape.push(shape);
    this.used += length;
    this.bytes += 8 * (length + m.navs.length) + MOMENT_OVERHEAD_BYTES;
  }

  *moments(): Generator<HistoryMoment, void, undefined> {
    for (let i = 0; i < this.ts.length; i++) {
      const { indexIds, ends } = this.shapes[this.shape[i]!]!;
      const start = this.start[i]!;
      yield { ts: this.ts[i]!, indexIds, navs: this.navs[i]!, values: this.blocks[this.block[i]!]!.subarray(start, start + (ends.at(-1) ?? 0)), ends };
    }
  }
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
    if (!Number.isSafeInteger(budgetBytes) || budgetBytes < 0 || budgetBytes > 2 ** 40) {
      throw new TypeError(`Expected \`budgetBytes\` to be an integer from 0 to 2^40, got \`${String(budgetBytes)}\``);
    }
  }

  moments(indexIds: readonly string[], interval: string, from: number, to: number): Iterable<HistoryMoment> {
    const key = JSON.stringify([indexIds, interval, from, to]);
    const kept = this.kept.get(key);
    if (kept !== undefined && kept !== 'over budget') return kept.moments();
    const read = this.cache.history.moments(indexIds, interval, from, to);
    return kept === 'over budget' ? read : this.record(key, read);
  }

  /** The records are parsed once and shared by the runs: nothing changes them (the detector is pure, and what it gives strategies it freezes). */
  transitions(indexIds: readonly string[], from: number, to: number): Generator<RebalanceTransition, void, undefined> {
    const key = JSON.stringify([indexIds, from, to]);
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
        if (this.usedBytes + recording.bytes > this.budgetBytes) {
          recording = undefined;
          this.kept.set(key, 'over budget');
        }
      }
      yield m;
    }
    // Only a range read to its end is kept: a run that stopped early (a handler threw) leaves nothing.
    if (recording) {
      this.kept.set(key, recording);
      this.usedBytes += recording.bytes;
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

/** A kept list as the cache's generator gives it (one that can be ended early). */
function* each<T>(items: readonly T[]): Generator<T, void, undefined> {
  yield* items;
}
