import { DAY, HOUR, type IndexSim, type Market, type SimRebalance } from './market.ts';

/**
 * The market seen through the contract: each function returns exactly the JSON record the
 * contract describes, at simulated time `t`.
 */
const iso = (t: number) => new Date(t).toISOString();
const round = (x: number, digits = 10) => Number(x.toPrecision(digits));

const SUPPLY = 1e6;

export function indexRecord(market: Market, index: IndexSim, t: number, detail: boolean) {
  const nav = index.nav(t);
  const dayAgo = index.nav(Math.max(index.inception, t - DAY));
  const state = index.stateAt(t)!;
  const lastRebalance = [...index.states].reverse().find((s) => s.from <= t && s.rebalanceId !== null);
  const circulating = SUPPLY * (0.6 + (0.3 * ((market.seed + index.def.id.length) % 10)) / 10);
  const summary = {
    id: index.def.id,
    name: index.def.name,
    description: index.def.description,
    current_price: round(nav),
    price_change_24h: round(nav - dayAgo),
    price_change_percentage_24h: round(((nav - dayAgo) / dayAgo) * 100, 6),
    market_cap: round(nav * circulating),
    total_supply: SUPPLY,
    circulating_supply: circulating,
    last_updated: iso(t),
    symbol: index.def.id.toUpperCase(),
    category: index.def.category,
    status: 'active' as const,
    constituents_count: state.members.length,
    rebalance_frequency: index.def.frequency,
    last_rebalance_at: lastRebalance ? iso(lastRebalance.from) : null,
    next_rebalance_at: iso(index.nextRebalanceAt(t)),
  };
  if (!detail) return summary;
  return {
    ...summary,
    methodology: {
      weighting: index.def.weighting,
      max_weight: index.def.maxWeight,
      min_constituents: index.def.minConstituents,
      max_constituents: index.def.maxConstituents,
      base_value: 1000,
      divisor: round(state.divisor),
    },
    fees: { management_bps: index.def.managementBps },
  };
}

export function compositionRecord(market: Market, index: IndexSim, t: number) {
  const state = index.stateAt(t)!;
  const values = state.members.map((m, i) => (state.shares[i]! / state.divisor) * market.price(m, t));
  const nav = values.reduce((a, b) => a + b, 0);
  const constituents = state.members
    .map((m, i) => {
      const token = market.tokens[m]!;
      return {
        address: token.address,
        symbol: token.symbol,
        name: token.name,
        weight: values[i]! / nav,
        target_weight: state.targets[i]!,
        price_usd: round(market.price(m, t)),
        units: round(state.shares[i]! / state.divisor, 12),
        value_usd: round(values[i]!),
      };
    })
    .sort((a, b) => b.target_weight - a.target_weight || a.symbol.localeCompare(b.symbol));
  return { index_id: index.def.id, as_of: iso(t), rebalance_id: state.rebalanceId, constituents };
}

const PERIODS: [string, number][] = [
  ['1h', HOUR],
  ['24h', DAY],
  ['7d', 7 * DAY],
  ['30d', 30 * DAY],
  ['90d', 90 * DAY],
  ['1y', 365 * DAY],
];

export function performanceRecord(index: IndexSim, t: number) {
  const nav = index.nav(t);
  const since = (from: number) => (from < index.inception ? null : round(nav / index.nav(from) - 1));
  const returns: Record<string, number | null> = {};
  for (const [name, ms] of PERIODS) returns[name] = since(t - ms);
  returns.ytd = since(Date.UTC(new Date(t).getUTCFullYear(), 0, 1));
  returns.inception = round(nav / 1000 - 1);
  const daily = (days: number) => {
    if (t - days * DAY < index.inception) return null;
    return Array.from({ length: days + 1 }, (_, k) => index.nav(t - (days - k) * DAY));
  };
  const logReturns = (navs: number[]) => navs.slice(1).map((v, i) => Math.log(v / navs[i]!));
  const stats = (xs: number[]) => {
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1));
    return { mean, sd };
  };
  const d30 = daily(30);
  const d90 = daily(90);
  let maxDrawdown: number | null = null;
  let sharpe: number | null = null;
  if (d90) {
    let peak = -Infinity;
    maxDrawdown = 0;
    for (const v of d90) {
      peak = Math.max(peak, v);
      maxDrawdown = Math.min(maxDrawdown, v / peak - 1);
    }
    const { mean, sd } = stats(logReturns(d90));
    sharpe = sd > 0 ? round((mean / sd) * Math.sqrt(365), 8) : 0;
    maxDrawdown = round(maxDrawdown);
  }
  return {
    index_id: index.def.id,
    as_of: iso(t),
    nav: round(nav),
    returns,
    volatility_30d: d30 ? round(stats(logReturns(d30)).sd * Math.sqrt(365), 8) : null,
    max_drawdown_90d: maxDrawdown,
    sharpe_90d: sharpe,
  };
}

/** The grid times of a history query: every interval boundary in [from, to], from inception to now. */
export function historyTimes(index: IndexSim, from: number, to: number, stepMs: number, now: number): { first: number; count: number } {
  const start = Math.max(from, index.inception);
  const end = Math.min(to, now);
  const first = Math.ceil(start / stepMs) * stepMs;
  const count = end < first ? 0 : Math.floor((end - first) / stepMs) + 1;
  return { first, count };
}

export function historyPoint(market: Market, index: IndexSim, t: number) {
  const state = index.stateAt(t)!;
  const values = state.members.map((m, i) => (state.shares[i]! / state.divisor) * market.price(m, t));
  const nav = values.reduce((a, b) => a + b, 0);
  return {
    timestamp: iso(t),
    nav: round(nav),
    constituents: state.members.map((m, i) => ({
      address: market.tokens[m]!.address,
      symbol: market.tokens[m]!.symbol,
      price_usd: round(market.price(m, t)),
      weight: values[i]! / nav,
    })),
  };
}

export function rebalanceRecord(event: SimRebalance, t: number) {
  const cancelled = event.cancelledAt !== null && event.cancelledAt <= t && event.cancelledAt < event.effectiveAt;
  const completed = !cancelled && event.effectiveAt <= t;
  return {
    id: event.id,
    index_id: event.indexId,
    status: cancelled ? ('cancelled' as const) : completed ? ('completed' as const) : ('announced' as const),
    announced_at: iso(event.announcedAt),
    effective_at: iso(event.effectiveAt),
    completed_at: completed ? iso(event.effectiveAt) : null,
    reason: event.reason,
    changes: event.changes,
  };
}

/** Rebalances public at `t`, newest announcement first. */
export function visibleRebalances(index: IndexSim, t: number): SimRebalance[] {
  return index.events.filter((e) => e.announcedAt <= t).sort((a, b) => b.announcedAt - a.announcedAt || b.id.localeCompare(a.id));
}

export function tokenRecord(market: Market, tokenIndex: number, t: number) {
  const token = market.tokens[tokenIndex]!;
  const price = market.price(tokenIndex, t);
  const dayAgo = market.price(tokenIndex, t - DAY);
  const change = price / dayAgo - 1;
  const mcap = token.supply * price;
  return {
    address: token.address,
    symbol: token.symbol,
    name: token.name,
    decimals: token.decimals,
    price_usd: round(price),
    market_cap_usd: round(mcap),
    volume_24h_usd: round(mcap * (0.03 + Math.min(0.5, Math.abs(change) * 3))),
    change_24h: round(change),
    updated_at: iso(t),
  };
}

export function portfolioRecord(market: Market, wallet: string, t: number) {
  const holdings = market.holdingsFor(wallet).flatMap(({ indexId, units }) => {
    const index = market.index(indexId, t);
    if (!index) return [];
    const nav = index.nav(t);
    const cost = units * index.nav(Math.max(index.inception, t - 30 * DAY));
    const value = units * nav;
    return [{ index_id: indexId, units, nav: round(nav), value_usd: round(value), cost_basis_usd: round(cost), unrealized_pnl_usd: round(value - cost) }];
  });
  return { wallet, as_of: iso(t), total_value_usd: round(holdings.reduce((s, h) => s + h.value_usd, 0)), holdings };
}
