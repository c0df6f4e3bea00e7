import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, renameSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { availableParallelism } from 'node:os';
import { type Command, InvalidArgumentError } from 'commander';
import { SingleBar } from 'cli-progress';
import {
  type BacktestOptions,
  MAX_WORKERS,
  PARTIAL_SUFFIX,
  type ReportSummary,
  buildReport,
  reportJsonChunks,
  writeReportFiles,
  defaultMaxGapMs,
  edgeGaps,
  SWEEP_COLUMNS,
  failureLine,
  formatTable,
  isLargeGap,
  renderSweepHtml,
  sweepHeadings,
  sweptOnly,
  renderTable,
  replayRange,
  runBacktest,
  runSweep,
  sweepFile,
} from '../backtest/index.ts';
import { BOUNDS, type Config, type ConfigFlags, loadConfig } from '../config/index.ts';
import { HISTORY_INTERVALS, type HistoryInterval, INTERVAL_MS } from '../contract/index.ts';
import { BacktestDataError, ConfigError, type Logger, StrategyError, UsageError, countingInfo, escapeRegExp, jsonSyntaxText, makeDirectories, missingDirectories } from '../core/index.ts';
import { stableHash } from '../detect/index.ts';
import { SnapshotStore, type TimeRange } from '../store/index.ts';
import {
  type LoadedStrategy,
  STRATEGY_SOURCE,
  type Strategy,
  checkConfiguredNames,
  loadStrategies,
  loadStrategyModule,
  strategyFileNamed,
  strategyFiles,
  withParams,
  ParamsError,
} from '../strategy/index.ts';
import { LOG_FLAGS, checkRange, dateOption, exitOnInterrupt, intOption, intervalOption, listOption, loggerFor, numberOption, prepareOutputDirectory, withConfigFlags } from './options.ts';
import { EXAMPLE_STRATEGIES, packageJson } from './package-files.ts';

interface BacktestFlags extends ConfigFlags, BacktestInputFlags {
  strategy: string;
  /** Each --params given, in order; none given: undefined (so --help shows no default). */
  params?: Record<string, unknown>[];
  grid?: string;
  out?: string;
  json?: boolean;
  allowFailures?: boolean;
  workers?: number;
}

export const paramsOption = (raw: string, previous: Record<string, unknown>[] = []): Record<string, unknown>[] => {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new InvalidArgumentError(`expected a JSON object like '{"holdHours":12}', got ${raw}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidArgumentError(`expected a JSON object, got ${raw}`);
  return [...previous, value as Record<string, unknown>];
};

/**
 * Refuses a param that --params fixes and a grid or space (`source`) varies: the varied value
 * would win, and the flag be ignored without a word (trial 25: `--params '{"notionalUsd":5}'`
 * beside a grid of notionalUsd ran the grid's values alone).
 */
export function refuseFixedAndVaried(given: readonly Record<string, unknown>[], varied: readonly string[], source: string): void {
  const both = [...new Set(given.flatMap((p) => Object.keys(p)))].filter((k) => varied.includes(k));
  if (both.length > 0) throw new UsageError(`--params sets ${both.join(', ')}, which ${source} also varies: give ${both.length > 1 ? 'each' : 'it'} in one of them`);
}

/** The most combinations a grid may make, as optimize's --trials and walk-forward's backtests. */
export const MAX_GRID_SETS = 100_000;

/** A grid file `{ "param": [v1, v2], ... }` as every combination, in a stable order. */
export function gridCombinations(file: string): Record<string, unknown>[] {
  let text: string;
  let grid: unknown;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`${file}: not a readable JSON grid: ${(e as Error).message}`);
  }
  try {
    grid = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`${file}: not a readable JSON grid: ${jsonSyntaxText(e, text)}`);
  }
  if (typeof grid !== 'object' || grid === null || Array.isArray(grid)) throw new ConfigError(`${file}: expected an object of parameter name to list of values`);
  if (Object.keys(grid).length === 0) throw new ConfigError(`${file}: names no param; expected an object of parameter name to list of values, e.g. {"holdHours": [6, 12]}`);
  for (const [key, values] of Object.entries(grid)) {
    if (!Array.isArray(values) || values.length === 0) throw new ConfigError(`${file}: ${key}: expected a non-empty list of values, got ${JSON.stringify(values)}`);
    // The same value twice is the same run twice, written to the same folder.
    const seen = new Set<string>();
    for (const v of values as unknown[]) {
      const text = JSON.stringify(v);
      if (seen.has(text)) throw new ConfigError(`${file}: ${key}: lists ${text} more than once`);
      seen.add(text);
    }
  }
  // Counted before any is made: a million combinations took minutes and 660 MB before the first run (trial 34).
  const total = Object.values(grid as Record<string, unknown[]>).reduce((n, values) => n * values.length, 1);
  if (total > MAX_GRID_SETS) {
    throw new ConfigError(`${file}: ${total} combinations, over ${MAX_GRID_SETS}: narrow the lists, or search the space with \`indexbot optimize\``);
  }
  let combos: Record<string, unknown>[] = [{}];
  for (const [key, values] of Object.entries(grid as Record<string, unknown[]>)) combos = combos.flatMap((c) => values.map((v) => ({ ...c, [key]: v })));
  return combos;
}

/**
 * The strategy with `params`; a set its schema refuses is named by where it came from (the
 * grid file and the set, or --params), not only by the strategy's file. When every key at
 * fault is one --params gave, it is a bad flag (exit 64), as bad JSON there is; otherwise a
 * bad value in a file, the grid's or the config's (78).
 */
export function withParamsFrom(strategy: Strategy, file: string, params: Record<string, unknown>, from: ParamsSource | undefined): LoadedStrategy {
  try {
    return withParams(strategy, file, params);
  } catch (e) {
    if (from === undefined || !(e instanceof ParamsError)) throw e;
    const message = `${from.where}: ${e.message}`;
    throw e.keys.every((k) => from.flagKeys.has(k)) ? new UsageError(message) : new StrategyError(message, 'STRATEGY_PARAMS');
  }
}

/** Where a run's params came from: the layers named, and the keys whose value --params gave (no grid set over it). */
export interface ParamsSource {
  where: string;
  flagKeys: ReadonlySet<string>;
}

/** One layer of a run's params: a set, and which of how many its source gives. */
interface ParamsLayer {
  set: Record<string, unknown>;
  index: number;
  total: number;
}

/**
 * Where a run's params came from, for {@link withParamsFrom}: each layer that gave any, the
 * grid's set over --params over the config's, so the refused key can be found in one of them.
 */
export function paramsSource(layers: { grid?: ParamsLayer & { file: string }; params?: ParamsLayer; config?: Record<string, unknown> }): ParamsSource | undefined {
  const which = (l: ParamsLayer) => `${l.total > 1 ? `set ${l.index + 1} of ${l.total} ` : ''}${JSON.stringify(l.set)}`;
  const parts: string[] = [];
  if (layers.grid) parts.push(`--grid ${layers.grid.file}, ${which(layers.grid)}`);
  const flagKeys = new Set(Object.keys(layers.params?.set ?? {}).filter((k) => !(layers.grid && k in layers.grid.set)));
  if (layers.params && Object.keys(layers.params.set).length > 0) parts.push(`--params ${which(layers.params)}`);
  if (layers.config && Object.keys(layers.config).length > 0) parts.push(`the config's strategies.params ${JSON.stringify(layers.config)}`);
  return parts.length > 0 ? { where: parts.join(' over '), flagKeys } : undefined;
}

export function registerBacktestCommand(program: Command): void {
  withConfigFlags(
    withBacktestInputOptions(
      program
        .command('backtest')
        .description('replay cached history through a strategy on a simulated clock and write a report (JSON, HTML, table)')
        .requiredOption('--strategy <name|path>', 'a strategy name from the strategies directory, or a strategy file'),
    )
      .option('--params <json>', "strategy params over the config's; give it several times for a sweep", paramsOption)
      .option('--grid <file>', 'JSON file of param name -> list of values: one run per combination')
      .option('--out <dir>', 'where report.json and report.html go (default data/backtests/<run id>)')
      .option('--json', 'print the report JSON (a sweep: its comparison) instead of tables')
      .option('--allow-failures', 'exit 0 even when a strategy handler failed on events (skipped; the report warns of them)')
      .option(
        '--workers <n>',
        `a sweep's runs at once, on this thread and worker threads (default the number of cores, ${availableParallelism()}, fewer for a short sweep)`,
        intOption(1, MAX_WORKERS),
      ),
    'config',
    'db',
    ...LOG_FLAGS,
    'strategies',
  ).action(async (flags: BacktestFlags) => {
    const config = loadConfig(flags, process.env, { server: false, services: false });
    const logger = loggerFor(config);
    const { strategy, file } = await resolveStrategy(flags.strategy, config, logger);
    const base = config.strategies.params[strategy.name] ?? {};
    const given = flags.params ?? [{}];
    const sets = flags.grid ? gridCombinations(flags.grid) : [undefined];
    if (flags.grid) refuseFixedAndVaried(given, Object.keys(sets[0] ?? {}), `--grid ${flags.grid}`);
    if (sets.length * given.length > MAX_GRID_SETS) throw new UsageError(`--params and --grid: ${sets.length} x ${given.length} runs, over ${MAX_GRID_SETS}: give fewer`);
    const runs = sets.flatMap((g, gi) =>
      given.map((p, pi) =>
        withParamsFrom(
          strategy,
          file,
          { ...base, ...p, ...g },
          paramsSource({
            grid: g && { file: flags.grid!, set: g, index: gi, total: sets.length },
            params: { set: p, index: pi, total: given.length },
            config: base,
          }),
        ),
      ),
    );
    // The same params twice (a --params repeated, or one the grid overrides) is the same run twice, in one folder.
    const firstRun = new Map<string, number>();
    for (const [i, r] of runs.entries()) {
      const text = JSON.stringify(r.params);
      const first = firstRun.get(text);
      if (first !== undefined) throw new UsageError(`--params${flags.grid ? ' and --grid' : ''}: runs ${first + 1} and ${i + 1} have the same params, ${text}: give each set once`);
      firstRun.set(text, i);
    }
    if (runs.length === 1 && flags.workers !== undefined) logger.warn({ workers: flags.workers }, '--workers sets how many runs of a sweep go at once: a single run ignores it');
    // An --out this command makes is removed again if it fails before writing to it (trial 38: an empty folder left by a range with no data).
    const outMade = flags.out === undefined ? undefined : missingDirectories(flags.out);
    const cache = SnapshotStore.open(config.db, { readonly: true });
    try {
      // The reports' directory (or the one that will hold it, named by run id) is writable before the replay.
      prepareOutputDirectory(flags.out ?? join('data', 'backtests'), flags.out === undefined ? undefined : '--out');
      const { held: _held, ...common } = backtestInputs(flags, config, cache, logger, strategy);
      // One point is no run: every figure was 0 or blank, and it exited 0 (trial 34). Refused here, not in the engine: a lookahead check's cut at the first point is one.
      const { settings: replayed } = replayRange(cache, common);
      if (replayed.from === replayed.to) {
        throw new BacktestDataError(
          `the cache holds one ${replayed.interval} point in that range (${new Date(replayed.from).toISOString().slice(0, 16)}): a backtest needs two or more; widen the range${replayed.interval === '1d' ? ', or use --interval 1h' : ''}`,
          'BACKTEST_NO_DATA',
        );
      }
      // Each run's report (a sweep's run: its summary), for the failures below.
      let reports: ReportSummary[];
      if (runs.length === 1) {
        // The report object is kept for the table (reading report.json back held a second copy
        // of every fill), and report.json is written a piece at a time (as one string, 20 MB for 49,680 fills).
        const report = buildReport(await withProgress('backtest', logger, (onProgress) => runBacktest({ ...common, strategy: runs[0]!, onProgress })));
        const dir = flags.out ?? join('data', 'backtests', report.runId);
        writeReportFiles(report, dir);
        if (flags.json) for (const chunk of reportJsonChunks(report)) process.stdout.write(chunk);
        else process.stdout.write(`${renderTable(report)}report: ${join(dir, 'report.html')}\n`);
        reports = [report];
      } else {
        // Each run on a worker thread reading the cache file read-only; its report written there as
        // soon as it ends (the same bytes as one after another), into --out, or a folder renamed
        // for the sweep once every run id is known.
        const { cache: _cache, logger: _logger, ...settings } = common;
        // Made as a run's folder is (mkdtemp's are private, 0700: trial 38), and renamed for the sweep at its end.
        const into = flags.out ?? join('data', 'backtests', `.sweep-${randomBytes(6).toString('hex')}`);
        makeDirectories(into);
        // As walk-forward and optimize do: each run's info lines (a strategy's alerts, say) are
        // counted, not written (trial 25: 216 lines for 6 runs); the reports keep the alerts.
        const runLogs = manyRunsLogger(config, common.logger, logger);
        let lastProgressAt = Date.now();
        // Ctrl-C says what it kept, as optimize and backfill do (trial 34: exit 130 without a word, the runs in a hidden folder).
        const before = new Set(readdirSync(into));
        const stopListening = exitOnInterrupt(() => keepInterruptedSweep(into, before, runs.length, { hidden: flags.out === undefined, made: flags.out === undefined || outMade!.length > 0 }));
        try {
          reports = await runSweep({
            db: config.db,
            settings,
            jobs: runs.map((r) => ({ file: r.file, params: r.params as Record<string, unknown> })),
            workers: flags.workers,
            logger: runLogs.logger,
            // Said, as the default picks fewer threads than cores for a short sweep (trial 38: nothing told how many).
            onStart: (threads) => logger.info({ runs: runs.length, threads }, `sweep: ${runs.length} runs on ${threads} thread(s)`),
            onRun: (done, total) => {
              // A line every 5 s and the last, not one per run (trial 26: 24 lines for 8 runs; hundreds for a large grid).
              const now = Date.now();
              if (done < total && now - lastProgressAt < PROGRESS_EVERY_MS) return;
              lastProgressAt = now;
              logger.info({ done, total }, `sweep: ${done} of ${total} runs done`);
            },
            output: { dir: into },
          });
        } catch (e) {
          // A sweep that failed leaves no half of itself among the finished ones.
          if (flags.out === undefined) rmSync(into, { recursive: true, force: true });
          throw e;
        } finally {
          stopListening();
        }
        const sweepDir = flags.out ?? join('data', 'backtests', `sweep_${stableHash(reports.map((r) => r.runId)).slice(0, 12)}`);
        if (into !== sweepDir) {
          // The same sweep run again: its reports are the same bytes, and the new folder takes the old one's place.
          rmSync(sweepDir, { recursive: true, force: true });
          renameSync(into, sweepDir);
        }
        runLogs.sayUnshown('backtest');
        process.stdout.write(writeSweep(reports, sweepDir, flags.json));
      }
      // A run whose handler failed is written and shown, then fails the command: its figures miss what the handler would have done.
      const failed = reports.filter((report) => report.events.parked.count > 0);
      failOnHandlerErrors(
        runs.length === 1 ? 'the run' : `${failed.length} of ${runs.length} runs`,
        failed.reduce((n, r) => n + r.events.parked.count, 0),
        failureLine(failed[0]?.events.parked.errors[0] ?? ''),
        flags.allowFailures,
      );
    } catch (e) {
      // Its parents too, if it made them (--out a/b/c): the deepest first, each only while empty.
      for (const dir of outMade ?? []) removeIfEmpty(dir);
      throw e;
    } finally {
      cache.close();
    }
  });
}

/** rmdir, which removes nothing but an empty folder, whatever raced in between. */
function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {}
}

/**
 * What a sweep stopped by Ctrl-C kept: the run folders it finished (each written aside and
 * renamed whole), in `dir`, or, for a sweep without --out, in a folder renamed from the hidden
 * one it was gathered in. Only folders the sweep made are looked at: --out may hold others,
 * the user's own. Says so in a line.
 */
export function keepInterruptedSweep(dir: string, before: ReadonlySet<string>, total: number, o: { hidden: boolean; made: boolean }): string {
  const made = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory() && !before.has(e.name));
  for (const run of made.filter((r) => r.name.endsWith(PARTIAL_SUFFIX))) rmSync(join(dir, run.name), { recursive: true, force: true });
  const kept = made.filter((r) => !r.name.endsWith(PARTIAL_SUFFIX));
  if (kept.length === 0) {
    // A folder the sweep made goes with it (trial 38: "0 of 32 runs kept in" an empty --out); one that was there stays.
    if (o.made) removeIfEmpty(dir);
    return `backtest interrupted: none of the ${total} runs had finished; nothing was kept`;
  }
  const shown = o.hidden ? join(dirname(dir), `sweep_interrupted${basename(dir).replace(/^\.sweep/, '')}`) : dir;
  if (shown !== dir) renameSync(dir, shown);
  return `backtest interrupted: ${kept.length} of ${total} runs kept in ${shown} (each run's report.json and report.html); the same command runs them all again`;
}

/** How often a sweep says how far it has got. */
const PROGRESS_EVERY_MS = 5_000;

/** The flags of the replayed range and the paper account, as `backtest` and the research commands take them. */
export function withBacktestInputOptions(command: Command): Command {
  return command
    .option('--from <date>', 'start (default the first cached point)', dateOption)
    .option('--to <date>', 'end (default the last cached point)', dateOption)
    .option('--indexes <ids>', "comma-separated index ids (default the strategy's own `indexes`, else the configured ones that have cached history)", listOption)
    .option('--interval <interval>', `history interval: ${HISTORY_INTERVALS.join(' or ')}`, intervalOption, '1h')
    .option('--cash <usd>', "starting cash (default the config's paper cash)", numberOption(0, BOUNDS.cash.max, { aboveMin: true }))
    .option('--fee-bps <bps>', "fee per fill (default the config's)", numberOption(BOUNDS.bps.min, BOUNDS.bps.max))
    .option('--slippage-bps <bps>', "slippage per fill (default the config's)", numberOption(BOUNDS.bps.min, BOUNDS.bps.max))
    .option('--max-gap-hours <h>', 'refuse to run past a longer hole in the history (default 6 intervals)', intOption(1, 366 * 24))
    .option('--allow-gaps', 'run past larger holes (still reported)')
    .hook('preAction', (self) => {
      // Before the config, the database and what the cache holds, as the other flags are checked: a reversed range is a bad flag (exit 64) wherever it runs, and the backfill a missing range is told to run would be refused the same way (trials 25 and 30).
      const { from, to } = self.opts<BacktestInputFlags>();
      if (from !== undefined && to !== undefined) checkRange({ flag: '--from', at: from }, { flag: '--to', at: to });
    });
}

/** What a backtest-like command takes from the cache, the config and the flags shared with `backtest`. */
export interface BacktestInputFlags {
  from?: number;
  to?: number;
  indexes?: string[];
  interval: HistoryInterval;
  cash?: number;
  feeBps?: number;
  slippageBps?: number;
  maxGapHours?: number;
  allowGaps?: boolean;
}

/** The backfill that would give a run what it asked for: its own range and interval, DATE where it gave none. */
function backfillRemedy(flags: Pick<BacktestInputFlags, 'from' | 'to' | 'interval'>, indexes: readonly string[] | undefined): string {
  const day = (t: number) => new Date(t).toISOString().replace(/T00:00:00\.000Z$/, '');
  return [
    `indexbot backfill --from ${flags.from === undefined ? 'DATE' : day(flags.from)}`,
    flags.to === undefined ? '' : ` --to ${day(flags.to)}`,
    indexes === undefined ? '' : ` --indexes ${indexes.join(',')}`,
    flags.interval === '1h' ? '' : ` --interval ${flags.interval}`,
  ].join('');
}

/**
 * The options every replay of a command shares (all but the strategy), with the range defaulting
 * to what the cache holds, and `held`: the part of the range the cache holds. A hole between
 * --from or --to and the cache's first or last point is a gap like any other: longer than the
 * largest accepted, it stops the command unless --allow-gaps.
 */
export function backtestInputs(
  flags: BacktestInputFlags,
  config: Config,
  cache: SnapshotStore,
  logger: Logger,
  strategy: Pick<Strategy, 'indexes'>,
): Omit<BacktestOptions, 'strategy' | 'logger'> & { held: TimeRange; logger: Logger } {
  // The strategy's own list before the cache's: its handlers hear no other index, and another's hole would stop its run.
  const asked = flags.indexes ?? (strategy.indexes === undefined || strategy.indexes === 'all' ? undefined : [...strategy.indexes]);
  const span = cache.history.span(flags.interval, asked ?? (config.indexes === 'all' ? undefined : config.indexes));
  const indexes = asked ?? span.indexIds;
  if (flags.indexes) {
    // A name the cache has never heard of is a typo more often than an index to backfill.
    const known = cache.indexCacheSummaries().map((s) => s.indexId);
    const unknown = flags.indexes.filter((id) => !known.includes(id));
    if (unknown.length > 0 && known.length > 0) {
      const names = unknown.map((id) => `"${id}"`).join(', ');
      throw new UsageError(
        `--indexes: ${names} ${unknown.length > 1 ? 'are' : 'is'} no index ${config.db} knows (it knows ${known.join(', ')}); check the name, or run \`${backfillRemedy(flags, unknown)}\` first`,
      );
    }
  }
  if (indexes.length === 0 || span.first === null) {
    throw new BacktestDataError(`${config.db} holds no ${flags.interval} history${asked ? ` for ${asked.join(', ')}` : ''}; run \`${backfillRemedy(flags, asked)}\` first`, 'BACKTEST_NO_DATA');
  }
  const from = flags.from ?? span.first;
  const to = flags.to ?? span.last!;
  checkRange({ flag: flags.from === undefined ? 'the first cached point' : '--from', at: from }, { flag: flags.to === undefined ? 'the last cached point' : '--to', at: to });
  const iso = (t: number) => new Date(t).toISOString().slice(0, 16);
  const holds = `${config.db} holds ${flags.interval} history from ${iso(span.first)} to ${iso(span.last!)}`;
  if (from > span.last! || to < span.first) {
    throw new BacktestDataError(`${from > span.last! ? `--from ${iso(from)}` : `--to ${iso(to)}`}: ${holds} only; run \`indexbot backfill\` for other dates`, 'BACKTEST_NO_DATA');
  }
  const step = INTERVAL_MS[flags.interval];
  const maxGapMs = flags.maxGapHours === undefined ? defaultMaxGapMs(flags.interval) : flags.maxGapHours * 3_600_000;
  const ends = edgeGaps({ from, to }, span.first, span.last!, step);
  if (!flags.allowGaps) {
    const day = (t: number) => iso(t).slice(0, 10);
    if (ends.before && isLargeGap(ends.before, step, maxGapMs)) {
      throw new BacktestDataError(
        `--from ${iso(from)}: ${holds} only; backfill from ${day(from)}, start at --from ${iso(span.first)}, or pass --allow-gaps to run over the cached part`,
        'BACKTEST_GAP',
      );
    }
    if (ends.after && isLargeGap(ends.after, step, maxGapMs)) {
      throw new BacktestDataError(`--to ${iso(to)}: ${holds} only; backfill to ${day(to)}, end at --to ${iso(span.last!)}, or pass --allow-gaps to run over the cached part`, 'BACKTEST_GAP');
    }
  }
  return {
    cache,
    indexes,
    from,
    to,
    held: { from: Math.max(from, span.first), to: Math.min(to, span.last!) },
    interval: flags.interval,
    cash: flags.cash ?? config.strategies.paper.initialCash,
    feeBps: flags.feeBps ?? config.strategies.paper.feeBps,
    slippageBps: flags.slippageBps ?? config.strategies.paper.slippageBps,
    driftThreshold: config.driftThreshold,
    maxGapMs: flags.maxGapHours === undefined ? undefined : maxGapMs,
    allowGaps: flags.allowGaps ?? false,
    timeoutMs: config.strategies.timeoutMs,
    logger: logger.child({ component: 'backtest' }),
  };
}

/**
 * What walk-forward and optimize replay: the part of the range the cache holds (a larger hole
 * at either end stops at backtestInputs unless --allow-gaps), and the settings and logger each
 * of their backtests shares (each one's own range comes per window or trial).
 */
export function researchInputs(flags: BacktestInputFlags, config: Config, cache: SnapshotStore, logger: Logger, strategy: Pick<Strategy, 'indexes'>) {
  const { held, from: _from, to: _to, cache: _cache, logger: runLogger, ...settings } = backtestInputs(flags, config, cache, logger, strategy);
  return { from: held.from, to: held.to, settings, ...manyRunsLogger(config, runLogger, logger) };
}

/**
 * The logger of a command's many runs (optimize, walk-forward, check-lookahead): at the
 * default level their info lines are counted, not written (hundreds of runs each logging a
 * strategy's lines buried the command's own); --log-level debug writes them.
 */
export function manyRunsLogger(config: Config, runLogger: Logger, logger: Logger) {
  const runs = config.logLevel === 'info' ? countingInfo(runLogger) : { logger: runLogger, counted: () => 0 };
  return {
    logger: runs.logger,
    /** Once the runs are done: lines counted and never written are said to exist, so a user knows where to look. */
    sayUnshown(command: string): void {
      const lines = runs.counted();
      if (lines > 0) logger.info({ lines }, `${command}: the runs logged ${lines} info lines, not shown; --log-level debug shows them`);
    },
  };
}

/**
 * The strategy a research command runs, by name from the strategies directory or as a file.
 * The config's strategy names are checked against the directory either way: it may name
 * strategies this command does not run, but not ones the directory does not hold.
 */
export async function resolveStrategy(nameOrPath: string, config: Config, logger: Logger): Promise<{ strategy: Strategy; file: string }> {
  const { dir, explicit } = config.strategies;
  // A path (a slash, or a source file's extension) names a file, which must be there.
  if ((/[/\\]/.test(nameOrPath) || STRATEGY_SOURCE.test(nameOrPath)) && !existsSync(nameOrPath)) throw new ConfigError(`strategy file ${nameOrPath} does not exist`);
  const asFile = existsSync(nameOrPath) && STRATEGY_SOURCE.test(nameOrPath) ? await loadStrategyModule(nameOrPath) : undefined;
  const hasDir = existsSync(dir);
  if (asFile && !hasDir) return { strategy: asFile, file: nameOrPath };
  // A directory named (flag or config) to look a name up in must be there, as for a bot; the default one may not be: the examples are found by name without it (trial 40: exit 70 outside a project).
  if (!hasDir && explicit) throw new ConfigError(`strategies directory ${dir} does not exist`);
  // The config's names need no check against the strategies of the directory when each is a
  // file's, or they speak for another directory (where they would only be warned of).
  const stems = hasDir ? strategyFiles(dir).map((f) => basename(f).replace(STRATEGY_SOURCE, '')) : [];
  const configured = [...Object.keys(config.strategies.params ?? {}), ...(config.strategies.disabled ?? [])];
  const namesNeedNoLoad = (also: string) => config.strategies.onUnknownName === 'warn' || configured.every((n) => stems.includes(n) || n === also);
  // A file given by its path, alone: the strategies beside it are neither evaluated nor warned about (trial 37: every module in strategies/ ran, and broken ones were warned of).
  if (asFile && namesNeedNoLoad(asFile.name)) return { strategy: asFile, file: nameOrPath };
  // The file of that name, alone, when it holds that strategy: likewise.
  const named = asFile ? undefined : strategyFileNamed(dir, nameOrPath);
  if (named) {
    const strategy = await loadStrategyModule(named);
    // A sibling that names the same strategy is warned of, as a full load does: only their source is read here (trial 34: one won without a word).
    const twin = strategyFiles(dir).some((f) => f !== named && new RegExp(`['"\`]${escapeRegExp(nameOrPath)}['"\`]`).test(readFileSync(f, 'utf8')));
    if (strategy.name === nameOrPath && !twin && namesNeedNoLoad(nameOrPath)) return { strategy, file: named };
  }
  const all = await loadStrategies(dir, { onError: 'skip', explicit, logger });
  const names = [...new Set([...all.map((s) => s.strategy.name), ...(asFile ? [asFile.name] : [])])];
  checkConfiguredNames({ ...config.strategies, logger }, dir, names, hasDir && strategyFiles(dir).length > all.length);
  if (asFile) return { strategy: asFile, file: nameOrPath };
  const found = all.find((s) => s.strategy.name === nameOrPath);
  if (found) return { strategy: found.strategy, file: found.file };
  // One of the examples indexbot ships, which a project made by `init` does not hold.
  const example = strategyFileNamed(EXAMPLE_STRATEGIES, nameOrPath);
  if (example) return { strategy: await loadStrategyModule(example), file: example };
  const examples = strategyFiles(EXAMPLE_STRATEGIES).map((f) => basename(f).replace(STRATEGY_SOURCE, ''));
  // A name that names nothing is a bad flag (64), as it is to `strategies retry` and `pause` (trial 31: 78 here, 64 there).
  throw new UsageError(
    `no strategy named "${nameOrPath}" in ${dir} (found ${all.map((s) => s.strategy.name).join(', ') || 'none'}) nor among the examples (${examples.join(', ')}); give a name or a file path`,
  );
}

async function withProgress<T>(label: string, logger: Logger, run: (onProgress: BacktestOptions['onProgress']) => Promise<T>): Promise<T> {
  const bar = process.stderr.isTTY ? new SingleBar({ format: `${label} [{bar}] {percentage}% | {sim} | ETA {eta_formatted}`, stream: process.stderr }) : undefined;
  const started = Date.now();
  let lastLine = started;
  let begun = false;
  try {
    return await run(({ done, total, simNow }) => {
      const sim = new Date(simNow).toISOString().slice(0, 16);
      if (bar) {
        if (!begun) bar.start(total, 0, { sim });
        begun = true;
        bar.update(done, { sim });
      } else if (Date.now() - lastLine >= 5_000) {
        // Off a terminal, long runs say how far they got every 5 s.
        lastLine = Date.now();
        logger.info({ done, total, simNow: sim }, `${label}: ${Math.round((done / Math.max(1, total)) * 100)}%`);
      }
    });
  } finally {
    bar?.stop();
  }
}

/** Writes a sweep's sweep.json and sweep.html beside its runs' reports; returns what to print. */
function writeSweep(reports: ReportSummary[], dir: string, json: boolean | undefined): string {
  const file = sweepFile(reports, { createdAt: new Date().toISOString(), indexbotVersion: packageJson().version });
  const comparison = file.runs;
  writeFileSync(join(dir, 'sweep.json'), `${JSON.stringify(file, null, 1)}\n`);
  writeFileSync(join(dir, 'sweep.html'), renderSweepHtml(comparison, reports));
  if (json) return `${JSON.stringify(file, null, 1)}\n`;
  const rows = sweptOnly(comparison, file.swept).map((c) => SWEEP_COLUMNS.map(([key, , format]) => format(c[key] as never)));
  const headings = sweepHeadings(reports);
  return `${formatTable([headings.labels, ...rows])}\n${headings.warnings.map((w) => `(!) ${w}\n`).join('')}reports: ${dir}\n`;
}

/**
 * After the output is written: runs whose handlers failed on events (skipped; the figures
 * miss what they would have done) fail the command, exit 1, unless `--allow-failures`.
 */
export function failOnHandlerErrors(which: string, events: number, detail: string, allowed: boolean | undefined): void {
  if (events === 0 || allowed) return;
  process.stderr.write(
    `indexbot: ${which}: strategy handlers failed on ${events} event(s), which were skipped (${detail}); fix the strategy, or pass --allow-failures to accept the figures [BACKTEST_STRATEGY_FAILED]\n`,
  );
  process.exitCode = 1;
}
