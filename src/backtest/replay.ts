import { createHash } from 'node:crypto';
import { type HistoryInterval, INTERVAL_MS, type Rebalance } from '../contract/index.ts';
import { BacktestDataError, type Logger, type OptionRange, checkOptionRange, fewNames, silentLogger } from '../core/index.ts';
import { stableHash } from '../detect/index.ts';
import { SnapshotStore, type TimeRange, missingRanges } from '../store/index.ts';
import { type LoadedStrategy, type Rejection, StrategyRuntime, instrumentLabel, strategySourceHash } from '../strategy/index.ts';
import { MemoryEventLog } from './event-log.ts';
import { FEED_START, type HistorySource, readEachTime } from './recorded-history.ts';
import { ReplayMarket } from './replay-market.ts';
import { SimulatedClock, Timeline, asObserved } from './timeline.ts';
import { FillLedger, type RunFill } from './fill-ledger.ts';
import { withLazyList } from './lazy-list.ts';
import { type EquityPoint, type ReturnMetrics, type StrategyMetrics, returnMetrics, strategyMetricsOf } from './metrics.ts';

export interface BacktestOptions {
  /** The cache to replay; open it read-only: a backtest writes nothing to it. */
  cache: SnapshotStore;
  strategy: LoadedStrategy;
  indexes: readonly string[];
  from: number;
  to: number;
  /** @default '1h' */
  interval?: HistoryInterval | undefined;
  /** @default 10000 */
  cash?: number | undefined;
  /** @default 10 */
  feeBps?: number | undefined;
  /** @default 5 */
  slippageBps?: number | undefined;
  /** Weight minus target past which a constituent is drifting, as live. @default 0.02 */
  driftThreshold?: number | undefined;
  /** The largest hole in the history a run accepts. @default 6 intervals */
  maxGapMs?: number | undefined;
  /** Run past larger holes too (they are still reported). @default false */
  allowGaps?: boolean | undefined;
  /** Handler time limit, in real time. @default 5000 */
  timeoutMs?: number | undefined;
  /** @default silentLogger */
  logger?: Logger | undefined;
  /** Where the history points and rebalance status changes of `cache` are read from: a sweep's thread passes what it keeps across its runs. @default `cache`, read by this run */
  history?: HistorySource | undefined;
  onProgress?: ((progress: { done: number; total: number; simNow: number }) => void) | undefined;
}

export interface IndexCoverage {
  indexId: string;
  points: number;
  first: number | null;
  last: number | null;
  gaps: TimeRange[];
}

export interface BacktestResult {
  /**
   * The same inputs give the same id: it names the run, not the moment. Inputs are the
   * strategy (its source hash), params and settings, and what the cache gave the replay (its
   * coverage, the events and fills it made, the figures), so runs over two different caches
   * have two ids.
   */
  runId: string;
  strategy: { name: string; file: string; sourceHash: string; params: unknown };
  /** `from` and `to` are the range replayed: the one asked for, less any hole before the first cached point or after the last (allowed by `allowGaps`). */
  settings: { indexes: string[]; from: number; to: number; interval: HistoryInterval; cash: number; feeBps: number; slippageBps: number; driftThreshold: number; maxGapMs: number; allowGaps: boolean };
  /** The range asked for, when the cache held less of it and the run was narrowed to what it holds; else null. */
  requested: TimeRange | null;
  coverage: IndexCoverage[];
  metrics: StrategyMetrics;
  benchmarks: { indexId: string; metrics: ReturnMetrics }[];
  /** Every fill, with the event whose handler made it (made from the run's columns when first read). */
  fills: RunFill[];
  /** Orders the paper broker refused, with the event whose handler placed them. */
  rejections: (Rejection & { eventId: string })[];
  /** Positions held at `to`, each at its last replayed price (null when it never had one). */
  openPositions: { instrument: string; quantity: number; costUsd: number; price: number | null }[];
  /** What people read for each instrument traded, refused or held, by its key: a token's symbol, an index's id. */
  labels: Record<string, string>;
  fillsHash: string;
  eventCounts: Record<string, number>;
  /** Alerts the strategy raised (`ctx.alert`): there are no sinks in a backtest, so they are logged as they come and kept here. */
  alerts: number;
  /** The first {@link KEPT_ALERTS} of them, in order: memory stays flat however often a strategy alerts. */
  alertList: BacktestAlert[];
  parked: { count: number; errors: string[] };
  /**
   * Daily closes of the strategy's equity: the first point (at `from`, the starting cash), one
   * point at each 00:00 UTC boundary crossed (the value as of the last item replayed at or
   * before it) and the last (the end of the run). The metrics are computed on this series.
   */
  equity: EquityPoint[];
  /** Each index's value as daily closes alike (from its first point to its last): the buy-and-hold benchmarks. */
  navs: { indexId: string; points: [number, number][] }[];
  /** Timeline items replayed (history points and rebalancing transitions). */
  replayed: number;
  /** Real time spent; not part of the report, which must not change between runs. */
  elapsedMs: number;
  /** The strategy's `ctx.state` at the end, key by key: what it concluded (not part of the report). */
  finalState: Record<string, unknown>;
}

/** An alert a strategy raised in a backtest, at the simulated time of the event it answered. */
export interface BacktestAlert {
  at: number;
  message: string;
  data: unknown;
  eventId: string;
}

/** Alerts a run keeps for its report; the rest are counted (and were logged). */
export const KEPT_ALERTS = 1_000;

/**
 * Replays cached history through the live detector and strategy runtime on a simulated
 * clock. History points become composition and performance snapshots, rebalancing records
 * become feed observations at the times their statuses changed, and both go through the
 * same pure detectors as a live poll. Strategy state, paper book and event log live in a
 * private in-memory database: the cache is only read, and only up to the simulated now.
 */
export async function runBacktest(o: BacktestOptions): Promise<BacktestResult> {
  const started = performance.now();
  return replayIn(replayRange(o.cache, o), o, started);
}

/** What {@link replayRange} settles: the same for every run of a sweep, which settles it once (its queries cost a short run a twentieth of its time). */
export type ReplayRange = ReturnType<typeof replayRange>;

/** A run over a range {@link replayRange} settled for the same options and cache. */
export function runBacktestIn(range: ReplayRange, o: BacktestOptions): Promise<BacktestResult> {
  return replayIn(range, o, performance.now());
}

async function replayIn({ settings, coverage, requested }: ReplayRange, o: BacktestOptions, started: number): Promise<BacktestResult> {
  const interval = settings.interval;
  const sourceHash = strategySourceHash(o.strategy.file);
  const name = o.strategy.strategy.name;

  const clock = new SimulatedClock(settings.from);
  const ledger = SnapshotStore.open(':memory:');
  const log = new MemoryEventLog();
  const tokens = o.cache.history.tokens();
  const history = o.history ?? readEachTime(o.cache);
  const market = new ReplayMarket(o.cache, tokens, settings.driftThreshold);
  const fillLedger = new FillLedger();
  const rejections: BacktestResult['rejections'] = [];
  let alerts = 0;
  const alertList: BacktestAlert[] = [];
  const runLogger = o.logger ?? silentLogger;
  const runtime = new StrategyRuntime({
    store: ledger,
    events: log,
    market,
    strategies: [o.strategy],
    clock,
    logger: runLogger,
    paper: { initialCash: settings.cash, feeBps: settings.feeBps, slippageBps: settings.slippageBps },
    // A deterministic handler that failed once fails again: park at once, and say so in the report.
    maxAttempts: 1,
    // The report counts every failed event; the log shows the first few, not one line each.
    maxFailuresLogged: 5,
    timeoutMs: o.timeoutMs,
    startedAt: settings.from,
    onFill: (_s, f, eventId) => fillLedger.add(f, eventId),
    onReject: (_s, r, eventId) => rejections.push({ instrument: r.instrument, side: r.side, code: r.code, reason: r.reason, at: r.at, eventId }),
    onAlert: (_s, message, data, eventId, at) => {
      alerts++;
      if (alertList.length < KEPT_ALERTS) alertList.push({ at, message, data, eventId });
      runLogger.info({ strategy: name, at: new Date(at).toISOString(), data }, `alert: ${message}`);
    },
    // The ledger is private and thrown away: the report takes fills, book and state from the runtime.
    memoryOnly: true,
  });

  try {
    // The state of the feed at `from` is the baseline, as a first live poll: pending rebalances are announced.
    const atStart = new Map<string, Rebalance>();
    for (const t of history.transitions(settings.indexes, FEED_START, settings.from)) {
      atStart.set(t.record.id, asObserved(t.record, t.status));
      if (t.status === 'completed') market.completed(t.record);
    }
    for (const indexId of settings.indexes) {
      log.append(
        market.feed(
          indexId,
          [...atStart.values()].filter((r) => r.index_id === indexId),
          settings.from,
        ),
      );
    }

    const total = coverage.reduce((a, c) => a + c.points, 0) + o.cache.rebalanceTransitionCount(settings.indexes, settings.from, settings.to);
    // The report keeps daily closes, not every item: memory stays flat in the length of the history.
    const timeline = new Timeline({ clock, market, log, runtime, strategy: name, indexes: settings.indexes, cash: settings.cash, total, onProgress: o.onProgress });
    // Status changes after `from`, read as the replay reaches them.
    const transitions = history.transitions(settings.indexes, settings.from, settings.to);
    try {
      await timeline.replay(history.moments(settings.indexes, interval, settings.from, settings.to), transitions);
    } finally {
      // Ends the statement early too (a handler threw), so the cache can run it again.
      transitions.return(undefined);
    }
    const equityCloses = timeline.equity.equityPoints();
    const navCurves = [...timeline.navs].filter(([, closes]) => closes.started).map(([indexId, closes]) => ({ indexId, curve: closes.curve() }));

    const parked = ledger.strategies.parked(name);
    const openPositions = runtime.book(name)!.positions.map((p) => ({ instrument: p.instrument, quantity: p.quantity, costUsd: p.costUsd, price: market.price(p.instrument) ?? null }));
    const traded = [...new Set([...fillLedger.instrumentsFilled, ...[...rejections, ...openPositions].map((x) => x.instrument)])].sort();
    const metrics = strategyMetricsOf(equityCloses, fillLedger.book);
    // Points made one index at a time, for its figures only: the run keeps the columns.
    const benchmarks = navCurves.map(({ indexId, curve }) => ({ indexId, metrics: returnMetrics(curve.points()) }));
    const fillsHash = fillLedger.hash;
    const eventCounts = log.counts();
    const labels = Object.fromEntries(traded.map((key) => [key, instrumentLabel(o.cache, key)]));
    const parkedSummary = { count: parked.length, errors: parked.slice(0, 5).map((p) => `${p.eventId}: ${p.error}`) };
    // What was asked and all the cache gave that a report shows: two caches that differ (one a
    // daemon's polls filled, one backfill alone) are two runs, not one report written over the other.
    const read = {
      coverage,
      replayed: timeline.done,
      eventCounts,
      fillsHash,
      metrics,
      benchmarks,
      labels,
      parked: parkedSummary,
      alerts,
      openPositions,
      // Hashed an index at a time: the whole text of 40 indexes' 4 years was one 2.6 MB string.
      series: hashOfJson([equityCloses, new JsonList(navCurves, ({ indexId, curve }) => ({ indexId, points: curve.pairs() })), rejections, alertList]),
    };
    const result: BacktestResult = {
      runId: `bt_${stableHash({ name, sourceHash, params: o.strategy.params, settings, requested, read }).slice(0, 16)}`,
      strategy: { name, file: o.strategy.file, sourceHash, params: o.strategy.params },
      settings,
      requested,
      coverage,
      metrics,
      benchmarks,
      // In its place among the fields, made when first read (see withLazyList).
      fills: [],
      rejections,
      openPositions,
      labels,
      fillsHash,
      eventCounts,
      alerts,
      alertList,
      parked: parkedSummary,
      equity: equityCloses,
      // Made when first read, as the fills are: the report reads the columns, and 58,400 pairs held at report time lifted peak RSS.
      navs: navCurves.map(({ indexId, curve }) => withLazyList({ indexId, points: [] as [number, number][] }, 'points', curve, () => curve.pairs())),
      replayed: timeline.done,
      elapsedMs: performance.now() - started,
      finalState: Object.fromEntries(runtime.state(name)!),
    };
    return withLazyList(result, 'fills', fillLedger, () => fillLedger.fills());
  } finally {
    ledger.close();
  }
}

/** What a run reads and replays, as {@link replayRange} settles it. */
export type ReplayRangeOptions = Pick<BacktestOptions, 'indexes' | 'from' | 'to' | 'interval' | 'cash' | 'feeBps' | 'slippageBps' | 'driftThreshold' | 'maxGapMs' | 'allowGaps'>;

/**
 * A run's settings, defaults filled in and its range narrowed to what the cache holds, with
 * each index's coverage; throws, as the run would, when the cache cannot serve them. The
 * same options on the same cache give the same range: a sweep reads it once for all its runs.
 */
export function replayRange(cache: SnapshotStore, o: ReplayRangeOptions): { settings: BacktestResult['settings']; coverage: IndexCoverage[]; requested: TimeRange | null } {
  checkBacktestOptions(o);
  const interval = o.interval ?? '1h';
  const settings = {
    // A set, in one order: the same indexes listed otherwise (or one twice) are the same run, with the same id.
    indexes: [...new Set(o.indexes)].sort(),
    from: o.from,
    to: o.to,
    interval,
    cash: o.cash ?? 10_000,
    feeBps: o.feeBps ?? 10,
    slippageBps: o.slippageBps ?? 5,
    driftThreshold: o.driftThreshold ?? 0.02,
    maxGapMs: o.maxGapMs ?? defaultMaxGapMs(interval),
    allowGaps: o.allowGaps ?? false,
  };
  const coverage = checkCoverage(cache, settings, INTERVAL_MS[interval]);
  // Before the first cached point there is no price to trade or to hold: strategy and
  // buy-and-hold alike are measured over the range the cache holds.
  const held = { from: Math.min(...coverage.map((c) => c.first!)), to: Math.max(...coverage.map((c) => c.last!)) };
  const requested = held.from > settings.from || held.to < settings.to ? { from: settings.from, to: settings.to } : null;
  settings.from = Math.max(settings.from, held.from);
  settings.to = Math.min(settings.to, held.to);
  return { settings, coverage, requested };
}

/** The range of each number a run takes; the CLI's flags have the same. */
export const BACKTEST_RANGES = {
  cash: { min: 0, aboveMin: true, max: 1e12, integer: false },
  feeBps: { min: 0, max: 1_000, integer: false },
  slippageBps: { min: 0, max: 1_000, integer: false },
  driftThreshold: { min: 0, aboveMin: true, max: 1, integer: false },
  maxGapMs: { min: 1, max: 366 * 86_400_000 },
} satisfies Record<string, OptionRange>;

/**
 * A run's options checked before anything is read, each named with the value received
 * (trial 36: a NaN fee ran the whole replay and blamed the strategy for every event; a
 * negative cash ran; a date string got as far as the cache, as "no history in that range").
 */
function checkBacktestOptions(o: ReplayRangeOptions): void {
  const invalid = (message: string) => new BacktestDataError(message, 'BACKTEST_OPTIONS');
  for (const [name, value] of [
    ['from', o.from],
    ['to', o.to],
  ] as const) {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw invalid(`Expected \`${name}\` to be a time in epoch ms (Date.parse('2026-06-01') or a Date's getTime() gives one), got \`${String(value)}\` (${typeof value})`);
    }
  }
  if (!(o.from < o.to)) throw invalid(`Expected \`from\` before \`to\`, got ${new Date(o.from).toISOString()} .. ${new Date(o.to).toISOString()}`);
  if (!Array.isArray(o.indexes) || o.indexes.length === 0 || !o.indexes.every((i) => typeof i === 'string' && i !== '')) {
    throw invalid(`Expected \`indexes\` to be a list of one or more index ids, got \`${JSON.stringify(o.indexes)}\``);
  }
  if (o.interval !== undefined && !Object.hasOwn(INTERVAL_MS, o.interval)) throw invalid(`Expected \`interval\` to be one of ${Object.keys(INTERVAL_MS).join(', ')}, got \`${String(o.interval)}\``);
  for (const [name, range] of Object.entries(BACKTEST_RANGES)) checkOptionRange(name, o[name as keyof typeof BACKTEST_RANGES], range, invalid);
}

function checkCoverage(cache: SnapshotStore, s: { indexes: string[]; from: number; to: number; interval: HistoryInterval; maxGapMs: number; allowGaps: boolean }, step: number): IndexCoverage[] {
  const coverage = s.indexes.map((indexId): IndexCoverage => {
    const held = cache.history.held(indexId, s.interval, s.from, s.to, step);
    if (held.points === 0) return { indexId, ...held };
    const ends = edgeGaps(s, held.first!, held.last!, step);
    // A hole at an end that a backfill covered is a time the server had nothing for this index
    // (listed after --from, delisted before --to): no backfill would fill it, so it is no gap.
    const backfilled = cache.history.coverage(`history:${s.interval}`, indexId);
    const unfilled = (hole: TimeRange | null) => (hole ? missingRanges(hole, backfilled) : []);
    return { indexId, ...held, gaps: [...unfilled(ends.before), ...held.gaps, ...unfilled(ends.after)] };
  });
  const empty = coverage.filter((c) => c.points === 0).map((c) => c.indexId);
  const iso = (t: number) => new Date(t).toISOString().slice(0, 16);
  // No backfill helps: a 1d run from 01:00 to 12:00 holds no point (trial 34: told to backfill --from and --to the same day, which backfill refuses).
  if (empty.length === s.indexes.length && s.to - s.from < step) {
    throw new BacktestDataError(
      `${iso(s.from)} .. ${iso(s.to)} is shorter than one ${s.interval} interval and holds no ${s.interval} point: widen the range, or use a shorter --interval`,
      'BACKTEST_NO_DATA',
    );
  }
  // Whole days that cover the range: backfill's --to is a day, and must come after --from.
  const day = 86_400_000;
  const range = `--from ${new Date(s.from).toISOString().slice(0, 10)} --to ${new Date(Math.max(Math.ceil(s.to / day), Math.floor(s.from / day) + 1) * day).toISOString().slice(0, 10)}`;
  if (empty.length > 0) {
    throw new BacktestDataError(
      `no cached ${s.interval} history for ${empty.join(', ')} in that range; run \`indexbot backfill ${range} --interval ${s.interval} --indexes ${empty.join(',')}\``,
      'BACKTEST_NO_DATA',
    );
  }
  if (s.allowGaps) return coverage;
  // A hole the indexes share is one, named with them, as the warning of a run past it names it (trial 37: "2 gap(s)" here, "1 hole(s)" there).
  const large = new Map<string, string[]>();
  for (const c of coverage) {
    for (const g of c.gaps) {
      if (!isLargeGap(g, step, s.maxGapMs)) continue;
      const range = `${new Date(g.from).toISOString()} .. ${new Date(g.to).toISOString()}`;
      large.set(range, [...(large.get(range) ?? []), c.indexId]);
    }
  }
  if (large.size > 0) {
    const named = [...large].slice(0, 3).map(([range, indexIds]) => `${range} (${fewNames(indexIds)})`);
    throw new BacktestDataError(
      `the cached history has ${large.size} hole(s) longer than ${s.maxGapMs / 3_600_000} h (${named.join('; ')}${large.size > 3 ? '; …' : ''}); backfill them, or pass --allow-gaps (allowGaps: true from code) to run anyway`,
      'BACKTEST_GAP',
    );
  }
  return coverage;
}

/**
 * The holes between the ends of `range` and the first and last points held in it, as gaps
 * like those between points: from the first missing point to the last.
 */
export function edgeGaps(range: TimeRange, first: number, last: number, step: number): { before: TimeRange | null; after: TimeRange | null } {
  return {
    before: first - range.from >= step ? { from: range.from, to: first - step } : null,
    after: range.to - last >= step ? { from: last + step, to: range.to } : null,
  };
}

/** The largest hole a run accepts by default: six intervals. */
export const defaultMaxGapMs = (interval: HistoryInterval): number => 6 * INTERVAL_MS[interval];

/** A gap longer than the largest a run accepts without `allowGaps`. */
export const isLargeGap = (gap: TimeRange, step: number, maxGapMs: number): boolean => gap.to - gap.from + step > maxGapMs;

/** A list whose JSON text is made an element at a time, each element as `element` makes it. */
class JsonList<T> {
  constructor(
    readonly items: readonly T[],
    readonly element: (item: T) => unknown,
  ) {}
}

/** The SHA-256 of `JSON.stringify(items)`, fed a piece at a time (a long list is never one string), a {@link JsonList} as the array it stands for. */
function hashOfJson(items: readonly unknown[]): string {
  const hash = createHash('sha256').update('[');
  for (const [i, item] of items.entries()) {
    if (i > 0) hash.update(',');
    if (!(item instanceof JsonList)) {
      hash.update(JSON.stringify(item));
      continue;
    }
    hash.update('[');
    for (const [k, element] of item.items.entries()) hash.update(`${k === 0 ? '' : ','}${JSON.stringify(item.element(element))}`);
    hash.update(']');
  }
  return hash.update(']').digest('hex');
}
