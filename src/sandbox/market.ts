import { ANNOUNCE_LEAD_MS, INDEX_DEFINITIONS, type IndexDefinition, nextScheduled } from './indexes.ts';
import { hashString, normal, streamFor, unit } from './prng.ts';
import { type Token, buildUniverse } from './universe.ts';
import { cappedWeights, equalWeights } from './weights.ts';

/** Start of the simulated price history; every index starts at or after it. */
export const GENESIS = Date.UTC(2025, 0, 1);
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
const BASE_VALUE = 1000;
/** Notional USD the index shares are sized to at each rebalance; the divisor scales it to the index value. */
const NOTIONAL = 1e9;
const CANCEL_PROBABILITY = 0.12;

/**
 * Hourly prices of every token from GENESIS, a seeded random walk: a common SOL factor,
 * an idiosyncratic part, a little mean reversion and rare jumps. Between hours a price is
 * the geometric interpolation of its two neighbours, so it moves smoothly and every value
 * derived from it (weights, index values, returns) agrees with the hourly history.
 */
class PriceGrid {
  private logPrices: Float64Array[];
  private hours = 0;
  private readonly tokenStreams: (() => number)[];
  private readonly marketStream: () => number;

  constructor(
    seed: number,
    private readonly tokens: Token[],
  ) {
    this.tokenStreams = tokens.map((t) => streamFor(seed, `price:${t.symbol}`));
    this.marketStream = streamFor(seed, 'market');
    this.logPrices = tokens.map(() => new Float64Array(0));
  }

  private extend(toHour: number): void {
    if (toHour < this.hours) return;
    const size = Math.max(toHour + 1, this.hours * 2, 24 * 400);
    this.logPrices = this.logPrices.map((old) => {
      const next = new Float64Array(size);
      next.set(old.subarray(0, this.hours));
      return next;
    });
    for (let h = this.hours; h < size; h++) {
      const factor = 0.005 * normal(this.marketStream);
      this.tokens.forEach((t, i) => {
        const lp = this.logPrices[i]!;
        const start = Math.log(t.startPrice);
        if (h === 0) {
          lp[0] = start;
          return;
        }
        const random = this.tokenStreams[i]!;
        const prev = lp[h - 1]!;
        let r = t.beta * factor + t.sigma * normal(random) - 0.0004 * (prev - start);
        if (random() < 0.0015) r += (random() < 0.5 ? -1 : 1) * (0.08 + 0.17 * random());
        lp[h] = prev + r;
      });
    }
    this.hours = size;
  }

  price(token: number, t: number): number {
    const h = Math.max(0, (t - GENESIS) / HOUR);
    const h0 = Math.floor(h);
    this.extend(h0 + 1);
    const lp = this.logPrices[token]!;
    const a = lp[h0]!;
    const b = lp[h0 + 1]!;
    return Math.exp(a + (b - a) * (h - h0));
  }
}

export interface RebalanceChangeRecord {
  address: string;
  symbol: string;
  action: 'add' | 'remove' | 'increase' | 'decrease';
  old_weight: number;
  new_weight: number;
}

export interface SimRebalance {
  id: string;
  indexId: string;
  reason: 'scheduled' | 'manual';
  announcedAt: number;
  effectiveAt: number;
  cancelledAt: number | null;
  members: number[];
  targets: number[];
  changes: RebalanceChangeRecord[];
  applied: boolean;
}

interface IndexState {
  from: number;
  rebalanceId: string | null;
  members: number[];
  targets: number[];
  shares: number[];
  divisor: number;
}

/** One index: its rebalance timeline and the chain of states (constituents, shares, divisor) it produces. */
class IndexSim {
  readonly inception: number;
  readonly states: IndexState[] = [];
  readonly events: SimRebalance[] = [];
  private nextEffective: number;
  private manualCount = 0;
  private processedUntil: number;

  constructor(
    readonly def: IndexDefinition,
    private readonly market: Market,
    private readonly seed: number,
  ) {
    this.inception = GENESIS + def.inceptionDay * DAY;
    const { members, targets } = this.selectTargets(this.inception);
    const shares = this.sharesFor(members, targets, this.inception);
    this.states.push({ from: this.inception, rebalanceId: null, members, targets, shares, divisor: NOTIONAL / BASE_VALUE });
    this.nextEffective = nextScheduled(def, this.inception + ANNOUNCE_LEAD_MS[def.frequency]);
    this.processedUntil = this.inception;
  }

  /** Announces and applies, in time order, everything due up to `now`. */
  advance(now: number): void {
    if (now <= this.processedUntil) return;
    const lead = ANNOUNCE_LEAD_MS[this.def.frequency];
    for (;;) {
      const announceAt = this.nextEffective - lead;
      const pending = this.pending();
      const applyAt = pending.length > 0 ? Math.min(...pending.map((e) => e.effectiveAt)) : Infinity;
      if (Math.min(announceAt, applyAt) > now) break;
      if (applyAt <= announceAt) this.apply(pending.find((e) => e.effectiveAt === applyAt)!);
      else {
        this.announce(announceAt, this.nextEffective, 'scheduled', `rb_${this.def.id}_${stamp(this.nextEffective)}`);
        this.nextEffective = nextScheduled(this.def, this.nextEffective);
      }
    }
    this.processedUntil = now;
  }

  /** Announces a manual rebalance now, effective `inMs` later; pending ones are cancelled. */
  trigger(now: number, inMs: number): SimRebalance {
    this.advance(now);
    for (const e of this.pending()) if (e.cancelledAt === null || e.cancelledAt > now) e.cancelledAt = now;
    this.manualCount++;
    const event = this.announce(now, now + inMs, 'manual', `rb_${this.def.id}_${stamp(now)}_m${this.manualCount}`);
    this.advance(now);
    return event;
  }

  cancel(id: string, now: number): SimRebalance | undefined {
    this.advance(now);
    const event = this.events.find((e) => e.id === id);
    if (!event || event.applied || (event.cancelledAt !== null && event.cancelledAt <= now)) return undefined;
    event.cancelledAt = now;
    return event;
  }

  stateAt(t: number): IndexState | undefined {
    let lo = 0;
    let hi = this.states.length - 1;
    if (hi < 0 || t < this.states[0]!.from) return undefined;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.states[mid]!.from <= t) lo = mid;
      else hi = mid - 1;
    }
    return this.states[lo];
  }

  nav(t: number): number {
    const state = this.stateAt(t) ?? this.states[0]!;
    return state.members.reduce((sum, m, i) => sum + state.shares[i]! * this.market.price(m, t), 0) / state.divisor;
  }

  /** Scheduled or announced effective time after `t`. */
  nextRebalanceAt(t: number): number {
    const announced = this.events.filter((e) => !e.applied && e.announcedAt <= t && (e.cancelledAt === null || e.cancelledAt > t));
    return Math.min(nextScheduled(this.def, t), ...announced.map((e) => e.effectiveAt));
  }

  private pending(): SimRebalance[] {
    return this.events.filter((e) => !e.applied && (e.cancelledAt === null || e.cancelledAt > e.effectiveAt));
  }

  private announce(at: number, effectiveAt: number, reason: SimRebalance['reason'], id: string): SimRebalance {
    const before = this.latestTargets();
    let next = this.selectTargets(at);
    if (reason === 'manual' && sameTargets(before, next)) next = this.rotateOne(next, at);
    const lead = effectiveAt - at;
    const cancelled = reason === 'scheduled' && unit(this.seed, `cancel:${id}`) < CANCEL_PROBABILITY;
    const event: SimRebalance = {
      id,
      indexId: this.def.id,
      reason,
      announcedAt: at,
      effectiveAt,
      cancelledAt: cancelled ? at + Math.floor(lead / 2) : null,
      members: next.members,
      targets: next.targets,
      changes: this.diff(before, next),
      applied: false,
    };
    this.events.push(event);
    return event;
  }

  private apply(event: SimRebalance): void {
    const t = event.effectiveAt;
    const valueBefore = this.nav(t);
    this.states.push({
      from: t,
      rebalanceId: event.id,
      members: event.members,
      targets: event.targets,
      shares: this.sharesFor(event.members, event.targets, t),
      divisor: NOTIONAL / valueBefore,
    });
    event.applied = true;
  }

  private latestTargets(): { members: number[]; targets: number[] } {
    for (let i = this.events.length - 1; i >= 0; i--) {
      const e = this.events[i]!;
      if (e.cancelledAt === null || e.cancelledAt > e.effectiveAt) return e;
    }
    return this.states[0]!;
  }

  private sharesFor(members: number[], targets: number[], t: number): number[] {
    return members.map((m, i) => (targets[i]! * NOTIONAL) / this.market.price(m, t));
  }

  private selectTargets(t: number): { members: number[]; targets: number[] } {
    const ranked = this.market.tokens
      .filter((tok) => this.def.sectors.includes(tok.sector))
      .map((tok) => ({ index: tok.index, cap: tok.supply * this.market.price(tok.index, t) }))
      .sort((a, b) => b.cap - a.cap || a.index - b.index)
      .slice(0, this.def.maxConstituents);
    const targets =
      this.def.weighting === 'equal'
        ? equalWeights(ranked.length)
        : cappedWeights(
            ranked.map((r) => r.cap),
            this.def.maxWeight,
          );
    return { members: ranked.map((r) => r.index), targets };
  }

  /** A manual rebalance always changes something: swap the smallest member for the best outsider. */
  private rotateOne(current: { members: number[]; targets: number[] }, t: number): { members: number[]; targets: number[] } {
    const outsider = this.market.tokens
      .filter((tok) => this.def.sectors.includes(tok.sector) && !current.members.includes(tok.index))
      .sort((a, b) => b.supply * this.market.price(b.index, t) - a.supply * this.market.price(a.index, t))[0];
    const members = [...current.members];
    if (outsider) members[members.length - 1] = outsider.index;
    else members.reverse();
    const caps = members.map((m) => this.market.tokens[m]!.supply * this.market.price(m, t));
    const targets = this.def.weighting === 'equal' ? equalWeights(members.length).map((w, i) => (i === 0 ? w * 1.2 : w - (w * 0.2) / (members.length - 1))) : cappedWeights(caps, this.def.maxWeight);
    return { members, targets };
  }

  private diff(before: { members: number[]; targets: number[] }, after: { members: number[]; targets: number[] }): RebalanceChangeRecord[] {
    const old = new Map(before.members.map((m, i) => [m, before.targets[i]!]));
    const next = new Map(after.members.map((m, i) => [m, after.targets[i]!]));
    const changes: RebalanceChangeRecord[] = [];
    for (const m of new Set([...before.members, ...after.members])) {
      const o = old.get(m) ?? 0;
      const n = next.get(m) ?? 0;
      if (Math.abs(n - o) < 1e-9) continue;
      const action = o === 0 ? 'add' : n === 0 ? 'remove' : n > o ? 'increase' : 'decrease';
      const tok = this.market.tokens[m]!;
      changes.push({ address: tok.address, symbol: tok.symbol, action, old_weight: o, new_weight: n });
    }
    return changes.sort((a, b) => b.new_weight - a.new_weight || a.symbol.localeCompare(b.symbol));
  }
}

function sameTargets(a: { members: number[]; targets: number[] }, b: { members: number[]; targets: number[] }): boolean {
  const old = new Map(a.members.map((m, i) => [m, a.targets[i]!]));
  return a.members.length === b.members.length && b.members.every((m, i) => Math.abs((old.get(m) ?? -1) - b.targets[i]!) < 1e-6);
}

function stamp(t: number): string {
  return new Date(t)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, '')
    .replace('T', 't');
}

/** The simulated market: tokens, prices and indexes, all a pure function of the seed and the clock. */
export class Market {
  readonly tokens: Token[];
  readonly indexes = new Map<string, IndexSim>();
  private readonly prices: PriceGrid;
  readonly seed: number;

  constructor(seed: number) {
    this.seed = seed;
    this.tokens = buildUniverse(seed);
    this.prices = new PriceGrid(seed, this.tokens);
    for (const def of INDEX_DEFINITIONS) this.indexes.set(def.id, new IndexSim(def, this, seed));
  }

  price(token: number, t: number): number {
    return this.prices.price(token, t);
  }

  /** Brings every index up to `now`: announcements, cancellations and completions due by then. */
  advance(now: number): void {
    for (const index of this.indexes.values()) index.advance(now);
  }

  /** Index ids visible at `t` (an index appears at its inception). */
  listed(t: number): IndexSim[] {
    return [...this.indexes.values()].filter((i) => i.inception <= t);
  }

  index(id: string, t: number): IndexSim | undefined {
    const index = this.indexes.get(id);
    return index && index.inception <= t ? index : undefined;
  }

  /** Deterministic per-wallet holdings. */
  holdingsFor(wallet: string): { indexId: string; units: number }[] {
    const h = hashString(`${this.seed}:wallet:${wallet}`);
    const ids = [...this.indexes.keys()];
    const count = 2 + (h % 2);
    return Array.from({ length: count }, (_, k) => ({
      indexId: ids[(h + k * 3) % ids.length]!,
      units: Math.round((1 + unit(this.seed, `units:${wallet}:${k}`) * 49) * 1e4) / 1e4,
    }));
  }
}

export type { IndexSim };
