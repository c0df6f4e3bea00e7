import { type Decimal, ZERO, toNumber, usdShare, valueAt } from '../core/index.ts';
import type { EventType, IndexbotEvent } from '../detect/index.ts';
import type { SnapshotStore } from '../store/index.ts';
import { instrumentLabel, parseInstrument } from '../strategy/index.ts';

/** What `indexbot status --json` prints; the CLI hands its own query in, so both faces read the same. */
export interface StatusReport {
  jobs: { job: string; lastSuccessAt: number | null; lastSuccessAgeS: number | null; consecutiveFailures: number; lastError: string | null }[];
  strategies: {
    strategy: string;
    cursor: number;
    parked: number;
    fills: number;
    cash: number;
    initialCash: number;
    equity: number;
    pnlUsd: number;
    positions: { label: string; instrument: string; quantity: number; costUsd: number; valueUsd: number | null }[];
  }[];
  alerts: { sink: string; pending: number; delivered: number; givenUp: number; oldestPendingAt: number | null; lastError: string | null; lastGiveUpError: string | null }[];
  /** A runner's (--role strategies) is its last answered read of the event stream. */
  heartbeat: (({ lastSuccessfulPollAt: string } | { lastStreamReadAt: string }) & { ageS: number }) | null;
}

const MAX_PAGE = 500;
/** Batches read while filtering one page of events: a rare type cannot make a request scan the whole log. */
const MAX_SCANNED_BATCHES = 20;

/** A page of the event log after `since`, filtered by type and index; `next` is the seq to ask after. */
export function eventsPage(store: SnapshotStore, q: { since: number; type?: EventType | undefined; index?: string | undefined; limit: number }): { events: IndexbotEvent[]; next: number } {
  const out: IndexbotEvent[] = [];
  let after = q.since;
  for (let i = 0; i < MAX_SCANNED_BATCHES && out.length < q.limit; i++) {
    const batch = store.eventsAfter(after, MAX_PAGE);
    for (const e of batch) {
      after = e.seq;
      if ((q.type === undefined || e.type === q.type) && (q.index === undefined || e.indexId === q.index)) out.push(e);
      if (out.length === q.limit) break;
    }
    if (batch.length < MAX_PAGE) break;
  }
  return { events: out, next: after };
}

/** Each followed index: when it was polled last, its next announced rebalance, its largest constituents. */
export function indexesOverview(store: SnapshotStore, indexes: string[], now: number, marketNow: number) {
  const jobs = store.jobStates();
  // A runner polls nothing: its latest data is the composition the collector fetched, as the stream brought it.
  const fetched = new Map(store.indexCacheSummaries().map((i) => [i.indexId, i.compositionFetchedAt ?? 0]));
  return indexes.map((id) => {
    const last = Math.max(fetched.get(id) ?? 0, ...jobs.filter((j) => j.job.endsWith(`:${id}`)).map((j) => j.lastSuccessAt ?? 0));
    const pending = store
      .rebalancesAt(id, marketNow)
      .filter((r) => r.observedStatus === 'announced')
      .sort((a, b) => Date.parse(a.effective_at) - Date.parse(b.effective_at))[0];
    const composition = store.compositionAt(id);
    return {
      indexId: id,
      lastPollAt: last > 0 ? last : null,
      lastPollAgeS: last > 0 ? Math.round((now - last) / 1000) : null,
      nav: store.navAt(id, Number.MAX_SAFE_INTEGER)?.nav ?? null,
      nextRebalance: pending
        ? { id: pending.id, effectiveAt: pending.effective_at, changes: pending.changes.map((c) => ({ symbol: c.symbol, action: c.action, oldWeight: c.old_weight, newWeight: c.new_weight })) }
        : null,
      top: (composition?.constituents ?? [])
        .slice()
        .sort((a, b) => b.weight - a.weight)
        .slice(0, 5)
        .map((c) => ({ symbol: c.symbol, weight: c.weight })),
    };
  });
}

/** A strategy's recent fills, newest first, with a readable instrument label. */
export function recentFills(store: SnapshotStore, strategy: string, limit: number) {
  return store.strategies
    .fills(`strategy:${strategy}`)
    .slice(-limit)
    .reverse()
    .map((f) => ({ ...f, quantity: toNumber(f.quantity), price: toNumber(f.price), feeUsd: toNumber(f.feeUsd), label: instrumentLabel(store, f.instrument) }));
}

/**
 * A strategy's paper equity over time, rebuilt from its fills and the cached prices: cash plus
 * each position valued at the price the cache held at that moment (its cost when it held
 * none). `points` + 1 points evenly from the first fill to `end`, and one at each fill while
 * there are no more fills than `points`.
 */
export function equityCurve(store: SnapshotStore, strategy: string, end: number, points = 200): { t: number; equity: number }[] {
  const account = store.strategies.account(`strategy:${strategy}`);
  if (!account) return [];
  const fills = store.strategies.fills(`strategy:${strategy}`);
  if (fills.length === 0) return [{ t: end, equity: toNumber(account.cash) }];
  const start = fills[0]!.at;
  const last = Math.max(end, fills[fills.length - 1]!.at);
  const step = Math.max(1, (last - start) / points);
  const grid = Array.from({ length: points + 1 }, (_, i) => Math.round(start + i * step));
  // Each fill's step while they are few; past `points`, the grid alone (every fill still counted
  // between two points): a bot running for months made the page fetch and price one point per fill.
  const times = fills.length <= points ? [...new Set([...fills.map((f) => f.at), ...grid])].sort((a, b) => a - b) : [...new Set(grid)];
  const priceCache = new Map<string, number | undefined>();
  const priceAt = (instrument: string, t: number): number | undefined => {
    const key = `${instrument}@${t}`;
    if (!priceCache.has(key)) {
      const i = parseInstrument(instrument);
      priceCache.set(key, i.kind === 'index' ? store.navAt(i.indexId, t)?.nav : store.tokenPriceAt(i.address, t)?.priceUsd);
    }
    return priceCache.get(key);
  };
  // The fills replayed exactly, by the ledger's rule (core/money.ts); each point is then a number.
  let cash = account.initialCash;
  const held = new Map<string, { quantity: Decimal; costUsd: Decimal }>();
  const out: { t: number; equity: number }[] = [];
  let next = 0;
  for (const t of times) {
    for (; next < fills.length && fills[next]!.at <= t; next++) {
      const f = fills[next]!;
      const p = held.get(f.instrument) ?? { quantity: ZERO, costUsd: ZERO };
      const notional = valueAt(f.quantity, f.price);
      if (f.side === 'buy') {
        cash = cash.minus(notional).minus(f.feeUsd);
        held.set(f.instrument, { quantity: p.quantity.plus(f.quantity), costUsd: p.costUsd.plus(notional) });
      } else {
        cash = cash.plus(notional).minus(f.feeUsd);
        const left = p.quantity.minus(f.quantity);
        held.set(f.instrument, { quantity: left, costUsd: p.quantity.gt(ZERO) ? usdShare(p.costUsd, left, p.quantity) : ZERO });
      }
    }
    let value = cash;
    for (const [instrument, p] of held) {
      if (p.quantity.lte(ZERO)) continue;
      const price = priceAt(instrument, t);
      value = value.plus(price === undefined ? p.costUsd : valueAt(p.quantity, price));
    }
    out.push({ t, equity: toNumber(value) });
  }
  return out;
}
