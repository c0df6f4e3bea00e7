import { deepFreeze } from '../core/index.ts';
import type { Rebalance } from '../contract/index.ts';
import { type IndexbotEvent, type NewEvent, type RebalanceStates, detectRebalancing } from '../detect/index.ts';
import type { HistoryMoment, SnapshotStore } from '../store/index.ts';
import { type MarketQueries, parseInstrument } from '../strategy/index.ts';

type MarketComposition = NonNullable<ReturnType<MarketQueries['compositionAt']>>;

/** What the replay knows of one index: its last point, still packed, and its target weights. */
interface IndexState {
  readonly indexId: string;
  /** The last point replayed; undefined before the first. */
  ts: number | undefined;
  nav: number;
  /** `[tokenId, priceUsd, weight]` per constituent, as stored: `values[start .. end)`, shared with the other points of its moment. */
  values: Float64Array;
  start: number;
  end: number;
  /**
   * Target weight by token id: the first point's weights, then each completed rebalance's.
   * Before the first point, only what rebalances completed by then named (NaN for the rest,
   * which the first point gives). Replaced, never changed in place.
   */
  targets: Float64Array | undefined;
  rebalanceId: string | null;
  /** Target weights of the last point (the composition a query sees). */
  pointTargets: Float64Array | undefined;
  pointRebalanceId: string | null;
  /** Token ids whose weight was past the drift threshold at the last point. */
  drifting: number[];
  feed: RebalanceStates | undefined;
  /** `performance.updated:<indexId>:`, made once: an event's id is then one concatenation. */
  performanceIdPrefix: string;
}

/**
 * The seq an event is made with, until the event log numbers it: a property the event has
 * from the start is set in place, where one added later gives every event a second
 * allocation (its properties moved out of the object) and a shape of its own.
 */
const UNNUMBERED = 0;

/** The targets at an index's first point: what rebalances completed before it named, the point's weights for the rest, 0 for tokens in neither. */
function firstTargets(named: Float64Array | undefined, size: number, v: Float64Array, start: number, end: number): Float64Array {
  const targets = named ? Float64Array.from(named) : new Float64Array(size).fill(Number.NaN);
  for (let i = start; i < end; i += 3) if (Number.isNaN(targets[v[i]!]!)) targets[v[i]!] = v[i + 2]!;
  for (let id = 0; id < targets.length; id++) if (Number.isNaN(targets[id]!)) targets[id] = 0;
  return targets;
}

/** History points carry no returns: one frozen empty object serves every performance event. */
const NO_RETURNS = Object.freeze({});

/**
 * The market as the replay has seen it so far, and the live detectors' rules applied to it.
 * A history point stays packed: prices go to typed arrays by token id, drift is checked on
 * the packed weights, and a composition (or a timestamp string) is built only when a
 * strategy asks or an event needs one. The events it makes are the live detectors' (same
 * ids, types and payloads), their payloads frozen as made; the log freezes the event itself
 * once it has its seq, so the runtime need not walk them.
 *
 * Compared with `detectComposition`, one rule is left out on purpose: a completed rebalance
 * seen in a composition. In a replay the feed's status change always comes first and names
 * the same event: a duplicate.
 */
export class ReplayMarket implements MarketQueries {
  private readonly indexes = new Map<string, IndexState>();
  private readonly prices: Float64Array;
  private readonly pricedAt: Float64Array;
  private readonly idOf: Map<string, number>;
  private isoTs = Number.NaN;
  private isoText = '';

  constructor(
    private readonly cache: SnapshotStore,
    private readonly tokens: Map<number, { address: string; symbol: string }>,
    private readonly driftThreshold: number,
  ) {
    const size = Math.max(0, ...tokens.keys()) + 1;
    this.prices = new Float64Array(size).fill(Number.NaN);
    this.pricedAt = new Float64Array(size);
    this.idOf = new Map([...tokens].map(([id, t]) => [t.address, id]));
  }

  private state(indexId: string): IndexState {
    let s = this.indexes.get(indexId);
    if (!s) {
      s = {
        indexId,
        ts: undefined,
        nav: Number.NaN,
        values: new Float64Array(0),
        start: 0,
        end: 0,
        targets: undefined,
        rebalanceId: null,
        pointTargets: undefined,
        pointRebalanceId: null,
        drifting: [],
        feed: undefined,
        performanceIdPrefix: `performance.updated:${indexId}:`,
      };
      this.indexes.set(indexId, s);
    }
    return s;
  }

  /** One ISO string per replayed time, shared by every index at that time. */
  private iso(ts: number): string {
    if (ts !== this.isoTs) {
      this.isoTs = ts;
      this.isoText = new Date(ts).toISOString();
    }
    return this.isoText;
  }

  /**
   * A rebalance completed: its new weights are the index's targets from now on. A record names
   * only the constituents it changed: one completed before the index's first point (before the
   * run's start, say) leaves the others to that point, not at 0 (trial 34: a token capped at
   * 25 %, in no record, had a target of 0 for the whole run and never drifted).
   */
  completed(r: Rebalance): void {
    const s = this.state(r.index_id);
    const weights = new Float64Array(this.prices.length);
    if (s.targets) weights.set(s.targets);
    else if (s.ts === undefined) weights.fill(Number.NaN);
    for (const c of r.changes) {
      const id = this.idOf.get(c.address);
      if (id !== undefined) weights[id] = Math.max(c.new_weight, 0);
    }
    s.targets = weights;
    s.rebalanceId = r.id;
  }

  /** The rebalancing feed of an index as observed at `at`, through the live detector. */
  feed(indexId: string, records: Rebalance[], at: number): readonly NewEvent[] {
    const s = this.state(indexId);
    const { state, events } = detectRebalancing(indexId, s.feed, records, at);
    // A replay sees each status change of a record once, in order: after a final status the
    // record is never seen again, so the feed's memory keeps only the pending ones (it would
    // otherwise grow with every rebalance of the history, and be copied at each change).
    for (const r of records) if (r.status !== 'announced') delete state[r.id];
    s.feed = state;
    for (const e of events) deepFreeze(e.payload);
    return events;
  }

  /**
   * Takes in point `p` of a moment, and adds to `out` the events a live poll of it would have
   * raised. Nothing is allocated per point but those events: it runs for every item replayed.
   */
  point(m: HistoryMoment, p: number, out: IndexbotEvent[]): void {
    const indexId = m.indexIds[p]!;
    const ts = m.ts;
    const nav = m.navs[p]!;
    const v = m.values;
    const start = m.ends[p - 1] ?? 0;
    const end = m.ends[p]!;
    const s = this.state(indexId);
    const first = s.ts === undefined;
    const previousNav = s.nav;
    // Set at the first point, which saw to it that no target is NaN.
    const targets = first ? (s.targets = firstTargets(s.targets, this.prices.length, v, start, end)) : s.targets!;
    const wasDrifting = s.drifting;
    // The tokens drifting now, in constituent order: the last point's list while it is the same.
    let drifting = wasDrifting;
    let same = 0;
    for (let i = start; i < end; i += 3) {
      const id = v[i]!;
      this.prices[id] = v[i + 1]!;
      this.pricedAt[id] = ts;
      const weight = v[i + 2]!;
      const target = targets[id]!;
      if (Math.abs(weight - target) <= this.driftThreshold) continue;
      if (drifting === wasDrifting && wasDrifting[same] === id) same++;
      else {
        if (drifting === wasDrifting) drifting = wasDrifting.slice(0, same);
        drifting.push(id);
      }
      if (first || wasDrifting.includes(id)) continue;
      const token = this.tokens.get(id)!;
      const asOf = this.iso(ts);
      out.push({
        id: `composition.drift:${indexId}:${token.address}:${asOf}`,
        type: 'composition.drift',
        indexId: indexId,
        occurredAt: ts,
        detectedAt: ts,
        payload: Object.freeze({ address: token.address, symbol: token.symbol, weight, target, deviation: weight - target, threshold: this.driftThreshold }),
        seq: UNNUMBERED,
      } satisfies IndexbotEvent);
    }
    s.drifting = drifting === wasDrifting && same < wasDrifting.length ? wasDrifting.slice(0, same) : drifting;
    s.ts = ts;
    s.nav = nav;
    s.values = v;
    s.start = start;
    s.end = end;
    s.pointTargets = targets;
    s.pointRebalanceId = s.rebalanceId;
    if (!first && nav !== previousNav) {
      // The most frequent event of all: frozen level by level, without walking its keys.
      const payload = Object.freeze({ nav, returns: NO_RETURNS, asOf: ts });
      out.push({ id: s.performanceIdPrefix + this.iso(ts), type: 'performance.updated', indexId: indexId, occurredAt: ts, detectedAt: ts, payload, seq: UNNUMBERED } satisfies IndexbotEvent);
    }
  }

  compositionAt(indexId: string): MarketComposition | undefined {
    const s = this.indexes.get(indexId);
    if (s?.ts === undefined) return undefined;
    const v = s.values;
    const constituents: MarketComposition['constituents'] = [];
    for (let i = s.start; i < s.end; i += 3) {
      const token = this.tokens.get(v[i]!)!;
      constituents.push({ address: token.address, symbol: token.symbol, weight: v[i + 2]!, targetWeight: s.pointTargets![v[i]!]!, priceUsd: v[i + 1]!, units: null });
    }
    return { asOf: s.ts, constituents };
  }

  navAt(indexId: string): { nav: number; asOf: number } | undefined {
    const s = this.indexes.get(indexId);
    return s?.ts === undefined ? undefined : { nav: s.nav, asOf: s.ts };
  }

  tokenPriceAt(address: string): { priceUsd: number; asOf: number } | undefined {
    const id = this.idOf.get(address);
    return id === undefined || Number.isNaN(this.prices[id]!) ? undefined : { priceUsd: this.prices[id]!, asOf: this.pricedAt[id]! };
  }

  rebalancesAt(indexId: string, at: number): ReturnType<MarketQueries['rebalancesAt']> {
    return this.cache.rebalancesAt(indexId, at);
  }

  historyBetween(indexId: string, interval: string, from: number, to: number): { ts: number; nav: number }[] {
    // The history alone, as replayed: never a live bot's polls the cache may also hold.
    return this.cache.history.between(indexId, interval, from, to);
  }

  price(instrument: string): number | undefined {
    const i = parseInstrument(instrument);
    return i.kind === 'index' ? this.navAt(i.indexId)?.nav : this.tokenPriceAt(i.address)?.priceUsd;
  }
}
