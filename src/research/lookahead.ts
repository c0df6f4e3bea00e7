import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import { type BacktestOptions, type BacktestResult, runBacktest } from '../backtest/index.ts';
import { demoted } from '../core/index.ts';
import { CacheCopy, SnapshotStore } from '../store/index.ts';
import { type LoadedStrategy, loadStrategy, sourceLocation } from '../strategy/index.ts';

/**
 * The lookahead check: replay a strategy over the whole range, then, for each moment it
 * placed orders, replay it again on a copy of the cache cut at that moment, with the module
 * imported afresh. A strategy that learns only from its context decides the same both times;
 * one that reads the cache file itself, another file written from the future, or a global
 * filled by an earlier run decides differently, and each difference is reported. The whole
 * range is also replayed a second time on the same loaded module, as a sweep's runs share it:
 * a module variable one run leaves behind changes the next run's decisions.
 */

export interface LookaheadOptions extends Omit<BacktestOptions, 'strategy' | 'cache'> {
  /** The cache file: opened read-only and copied, never written. */
  cachePath: string;
  strategyFile: string;
  params: unknown;
  /** Most cut replays; past it, decision times are picked evenly. @default 50 */
  maxChecks?: number;
  onCheck?: (done: number, total: number) => void;
  /** Globals that existed before the strategy was first loaded. @default those at the call */
  globalsBefore?: ReadonlySet<string>;
}

/** One order the strategy placed: filled or refused. */
export interface Decision {
  at: number;
  eventId: string;
  side: 'buy' | 'sell';
  instrument: string;
  /** `filled`, or the refusal's code. */
  outcome: string;
  /** Filled quantity, 10 significant digits; null for a refusal. */
  quantity: number | null;
}

export interface Difference {
  /** The time the cache was cut at. */
  cutAt: number;
  decision: Decision;
  /** `full only`: the replay on the whole cache made it and the cut one did not; `cut only`: the reverse. */
  seenIn: 'full only' | 'cut only';
}

export interface ClockCall {
  call: 'Date.now()' | 'new Date()';
  /** `file:line:column` in the strategy file. */
  location: string;
  count: number;
}

export interface LookaheadResult {
  strategy: string;
  decisions: number;
  /** Decision times replayed on a cut cache. */
  checked: number;
  decisionTimes: number;
  differences: Difference[];
  /** Wall-clock reads from the strategy's own code during the replays: a backtest's time is `ctx.clock.now()`. */
  clockCalls: ClockCall[];
  /** Globals that appeared while the strategy ran. */
  globals: string[];
  /**
   * Decisions that differ when the whole range runs again on the same loaded module (`full
   * only`: the first run's; `cut only`: the second's): state kept between runs outside
   * `ctx.state`, which makes a sweep's results depend on the order of its runs.
   */
  carriedOver: { decision: Decision; seenIn: Difference['seenIn'] }[];
  /** Events the strategy's handlers failed on in the replay of the whole range (skipped): the check covers only what the rest did. */
  failedEvents: number;
  /** The first failure, `event id: error` and its stack; null when none failed. */
  firstFailure: string | null;
}

export async function checkLookahead(o: LookaheadOptions): Promise<LookaheadResult> {
  const file = resolve(o.strategyFile);
  const maxChecks = o.maxChecks ?? 50;
  if (!Number.isInteger(maxChecks) || maxChecks < 1) throw new RangeError(`Expected \`maxChecks\` to be a whole number >= 1, got ${maxChecks}`);
  const globalsBefore = o.globalsBefore ?? new Set(Object.getOwnPropertyNames(globalThis));
  const clock = watchWallClock(file);
  const dir = mkdtempSync(join(tmpdir(), 'indexbot-lookahead-'));
  let loaded: LoadedStrategy | undefined;
  // The first run's lines are written; the others replay the same events, and would write them again for every check.
  const quiet = o.logger && demoted(o.logger);
  const run = async (cachePath: string, to: number, logger = quiet, reuse = false): Promise<BacktestResult> => {
    // A strategy that opens the cache by itself, in a handler or when its module is evaluated
    // (each run but a reuse loads it afresh), finds it where the bot's own commands do.
    const previousDb = process.env.INDEXBOT_DB;
    process.env.INDEXBOT_DB = cachePath;
    const cache = SnapshotStore.open(cachePath, { readonly: true });
    try {
      const strategy = reuse && loaded ? loaded : (loaded = await loadStrategy(file, o.params));
      return await runBacktest({ ...o, cache, strategy, to, onProgress: undefined, logger });
    } finally {
      if (previousDb === undefined) delete process.env.INDEXBOT_DB;
      else process.env.INDEXBOT_DB = previousDb;
      cache.close();
    }
  };
  try {
    const full = await run(o.cachePath, o.to, o.logger);
    const decisions = decisionsOf(full);
    const carriedOver = compare(decisions, decisionsOf(await run(o.cachePath, o.to, quiet, true)), Number.POSITIVE_INFINITY);
    const times = [...new Set(decisions.map((d) => d.at))].sort((a, b) => b - a);
    const picked = evenly(times, maxChecks);
    const differences: Difference[] = [];
    const seen = new Set<string>();
    const shadow = shadowWorkingDir(o.cachePath, join(dir, 'cwd'));
    const copy = CacheCopy.create(o.cachePath, shadow?.cachePath ?? join(dir, 'cache.db'));
    const cwd = process.cwd();
    try {
      for (const [i, t] of picked.entries()) {
        copy.cutAfter(t);
        if (shadow) process.chdir(shadow.root);
        let cut: BacktestResult;
        try {
          cut = await run(copy.path, Math.max(t, o.from + 1));
        } finally {
          if (shadow) process.chdir(cwd);
        }
        for (const d of compare(decisions, decisionsOf(cut), t)) {
          const key = `${d.seenIn}|${keyOf(d.decision)}`;
          if (seen.has(key)) continue;
          seen.add(key);
          differences.push({ cutAt: t, ...d });
        }
        o.onCheck?.(i + 1, picked.length);
      }
    } finally {
      copy.close();
    }
    return {
      strategy: full.strategy.name,
      decisions: decisions.length,
      checked: picked.length,
      decisionTimes: times.length,
      differences: differences.sort((a, b) => a.decision.at - b.decision.at || a.seenIn.localeCompare(b.seenIn)),
      clockCalls: clock.calls(),
      globals: Object.getOwnPropertyNames(globalThis).filter((g) => !globalsBefore.has(g)),
      carriedOver,
      failedEvents: full.parked.count,
      firstFailure: full.parked.errors[0] ?? null,
    };
  } finally {
    clock.restore();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Where the cut replays run: a folder that reads as the working directory does (each entry a
 * link to the original) except at the cache's own path, where the cut copy will be. A strategy
 * that opens the cache by the path the bot uses (`data/indexbot.db`) finds the cut copy too,
 * as one that reads INDEXBOT_DB does. None for a cache outside the working directory, or in a
 * worker thread (which cannot change directory).
 */
function shadowWorkingDir(cachePath: string, root: string): { root: string; cachePath: string } | undefined {
  const cwd = process.cwd();
  const inside = relative(cwd, resolve(cachePath));
  if (!isMainThread || inside === '' || inside.startsWith('..') || isAbsolute(inside)) return undefined;
  const parts = inside.split(sep);
  const file = parts.at(-1)!;
  const sqliteFiles = new Set([file, `${file}-wal`, `${file}-shm`, `${file}-journal`]);
  let from = cwd;
  let to = root;
  mkdirSync(to);
  for (const [i, part] of parts.entries()) {
    const last = i === parts.length - 1;
    for (const name of readdirSync(from)) {
      if (last ? sqliteFiles.has(name) : name === part) continue;
      symlinkSync(join(from, name), join(to, name));
    }
    if (!last) {
      from = join(from, part);
      to = join(to, part);
      mkdirSync(to);
    }
  }
  return { root, cachePath: join(root, inside) };
}

const sig = (x: number) => Number(x.toPrecision(10));

export function decisionsOf(r: Pick<BacktestResult, 'fills' | 'rejections'>): Decision[] {
  const out: Decision[] = [
    ...r.fills.map((f) => ({ at: f.at, eventId: f.eventId, side: f.side, instrument: f.instrument, outcome: 'filled', quantity: sig(f.quantity) })),
    ...r.rejections.map((x) => ({ at: x.at, eventId: x.eventId, side: x.side, instrument: x.instrument, outcome: x.code as string, quantity: null })),
  ];
  return out.sort((a, b) => a.at - b.at || keyOf(a).localeCompare(keyOf(b)));
}

const keyOf = (d: Decision) => `${d.at}|${d.eventId}|${d.side}|${d.instrument}|${d.outcome}|${d.quantity}`;

/** Decisions up to `t` made by one replay and not the other (as multisets). */
export function compare(full: readonly Decision[], cut: readonly Decision[], t: number): { decision: Decision; seenIn: Difference['seenIn'] }[] {
  const count = new Map<string, { d: Decision; n: number }>();
  for (const d of full) if (d.at <= t) count.set(keyOf(d), { d, n: (count.get(keyOf(d))?.n ?? 0) + 1 });
  const extra: Decision[] = [];
  for (const d of cut) {
    if (d.at > t) continue;
    const c = count.get(keyOf(d));
    if (c && c.n > 0) c.n--;
    else extra.push(d);
  }
  const missing = [...count.values()].flatMap((c) => Array.from({ length: c.n }, () => c.d));
  return [...missing.map((decision) => ({ decision, seenIn: 'full only' as const })), ...extra.map((decision) => ({ decision, seenIn: 'cut only' as const }))];
}

/** At most `max` items, evenly spread, the first and last kept. */
export function evenly<T>(items: readonly T[], max: number): T[] {
  if (items.length <= max) return [...items];
  if (max === 1) return [items[0]!];
  return Array.from({ length: max }, (_, i) => items[Math.round((i * (items.length - 1)) / (max - 1))]!);
}

/** indexbot's own code (src/ in a checkout, dist/ installed) and every package: a clock read there is theirs, not the strategy's. */
const PACKAGE_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const isLibraryFrame = (frame: string) => frame.includes('/node_modules/') || frame.includes(`${PACKAGE_ROOT}src/`) || frame.includes(`${PACKAGE_ROOT}dist/`);

/**
 * Counts `Date.now()` and `new Date()` (no argument: the wall clock) made from the strategy
 * file while installed. A backtest runs on a simulated clock: such a call reads the real one.
 * A call made by library code the strategy called (the logger stamping `ctx.log`'s line, say)
 * is not the strategy's; one made by a helper of its own is, at the strategy's line.
 */
function watchWallClock(file: string): { calls(): ClockCall[]; restore(): void } {
  const RealDate = Date;
  const found = new Map<string, ClockCall>();
  const note = (call: ClockCall['call']) => {
    // Error, note, the watched now or constructor, then whoever read the clock.
    const frames = (new Error().stack ?? '').split('\n').slice(3);
    if (frames[0] === undefined || isLibraryFrame(frames[0])) return;
    const line = frames.find((l) => l.includes(file));
    if (!line) return;
    const location = sourceLocation(line.match(/\((.*)\)\s*$/)?.[1] ?? line.replace(/^\s*at\s+/, ''));
    const key = `${call}|${location}`;
    const c = found.get(key) ?? { call, location, count: 0 };
    c.count++;
    found.set(key, c);
  };
  class WatchedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) note('new Date()');
      super(...(args as []));
    }
    static override now(): number {
      note('Date.now()');
      return RealDate.now();
    }
  }
  globalThis.Date = WatchedDate as DateConstructor;
  return {
    calls: () => [...found.values()].sort((a, b) => a.location.localeCompare(b.location) || a.call.localeCompare(b.call)),
    restore: () => {
      globalThis.Date = RealDate;
    },
  };
}
