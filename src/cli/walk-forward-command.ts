import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { MAX_WORKERS, fixed, formatTable, pct, splitParams } from '../backtest/index.ts';
import { type ConfigFlags, loadConfig } from '../config/index.ts';
import { ConfigError, UsageError } from '../core/index.ts';
import { INTERVAL_MS } from '../contract/index.ts';
import { stableHash } from '../detect/index.ts';
import { RANK_METRICS, type RankMetric, renderWalkForwardPage, shortWindowMarks, sweepRunner, walkForward, walkForwardWindows } from '../research/index.ts';
import { SnapshotStore } from '../store/index.ts';
import {
  type BacktestInputFlags,
  MAX_GRID_SETS,
  failOnHandlerErrors,
  gridCombinations,
  refuseFixedAndVaried,
  paramsOption,
  paramsSource,
  researchInputs,
  resolveStrategy,
  withBacktestInputOptions,
  withParamsFrom,
} from './backtest-command.ts';
import { LOG_FLAGS, choiceOption, durationFlag, durationOption, exitOnInterrupt, intOption, loggerFor, prepareOutputDirectory, withConfigFlags } from './options.ts';

interface WalkForwardFlags extends ConfigFlags, BacktestInputFlags {
  strategy: string;
  /** Each --params given, in order; none given: undefined (so --help shows no default). */
  params?: Record<string, unknown>[];
  grid: string;
  train: number;
  test: number;
  step?: number;
  anchored?: boolean;
  metric: RankMetric;
  workers?: number;
  out?: string;
  json?: boolean;
  allowFailures?: boolean;
}

const day = (t: number) => new Date(t).toISOString().slice(0, 10);
/** Ratios print as numbers, fractions of money as percentages. */
export const formatMetric = (metric: RankMetric, v: number | null) => (['sharpe', 'sortino', 'calmar', 'profitFactor', 'expectancy'].includes(metric) ? fixed(v) : pct(v));

export function registerWalkForwardCommand(program: Command): void {
  withConfigFlags(
    withBacktestInputOptions(
      program
        .command('walk-forward')
        .description('choose params on each training window by a metric, run them on the test window after it, and report the test windows stitched together')
        .requiredOption('--strategy <name|path>', 'a strategy name from the strategies directory, or a strategy file')
        .requiredOption('--grid <file>', 'JSON file of param name -> list of values: the candidates on each training window')
        .requiredOption('--train <duration>', 'training window, e.g. 90d or 36h (1h to 3650d)', durationOption)
        .requiredOption('--test <duration>', 'test window after each training window', durationOption),
    )
      .option('--step <duration>', 'how far each window moves on (default --test; at least --test)', durationOption)
      .option('--anchored', 'every training window starts at --from and grows')
      .option('--metric <name>', `what the best params maximise: ${RANK_METRICS.join(', ')}`, choiceOption(RANK_METRICS), 'sharpe')
      .option('--params <json>', "fixed params beside the grid's (a param in both is refused), over the config's", paramsOption)
      .option('--workers <n>', `backtests at once, on this thread and worker threads (default the number of cores, ${availableParallelism()}, fewer for a short sweep)`, intOption(1, MAX_WORKERS))
      .option('--out <dir>', 'where walk-forward.json and walk-forward.html go (default data/walk-forward/<id>)')
      .option('--json', 'print the result as JSON')
      .option('--allow-failures', 'exit 0 even when strategy handlers failed on events (params that failed rank last)'),
    'config',
    'db',
    ...LOG_FLAGS,
    'strategies',
  ).action(async (flags: WalkForwardFlags) => {
    // A window shorter than one interval holds one point at most, and no backtest (trial 34: told to backfill a day to the same day).
    for (const [flag, ms] of [
      ['--train', flags.train],
      ['--test', flags.test],
    ] as const) {
      if (ms < INTERVAL_MS[flags.interval]) throw new UsageError(`${flag} ${durationFlag(ms)} is shorter than one ${flags.interval} interval: lengthen it, or use a shorter --interval`);
    }
    const config = loadConfig(flags, process.env, { server: false, services: false });
    const logger = loggerFor(config);
    const loaded = await resolveStrategy(flags.strategy, config, logger);
    const configParams = config.strategies.params[loaded.strategy.name] ?? {};
    const givenParams: Record<string, unknown> = Object.assign({}, ...(flags.params ?? []));
    const base = { ...configParams, ...givenParams };
    const sets = gridCombinations(flags.grid);
    refuseFixedAndVaried(flags.params ?? [], Object.keys(sets[0] ?? {}), `--grid ${flags.grid}`);
    const grid = sets.map((g) => ({ ...base, ...g }));
    const swept = Object.keys(sets[0] ?? {});
    // Every candidate is checked against the schema before hours of replays.
    for (const [i, p] of grid.entries()) {
      withParamsFrom(
        loaded.strategy,
        loaded.file,
        p,
        paramsSource({ grid: { file: flags.grid, set: sets[i]!, index: i, total: sets.length }, params: { set: givenParams, index: 0, total: 1 }, config: configParams }),
      );
    }
    const cache = SnapshotStore.open(config.db, { readonly: true });
    try {
      const { from, to, settings, logger: runLogger, sayUnshown } = researchInputs(flags, config, cache, logger, loaded.strategy);
      const windows = walkForwardWindows({ from, to, trainMs: flags.train, testMs: flags.test, stepMs: flags.step, anchored: flags.anchored });
      if (windows.length * (grid.length + 1) > MAX_GRID_SETS)
        throw new ConfigError(`${windows.length} windows x ${grid.length} params is over ${MAX_GRID_SETS} backtests; shorten the grid or lengthen --step`);
      const id = `wf_${stableHash({ strategy: loaded.strategy.name, grid, windows, metric: flags.metric }).slice(0, 12)}`;
      const dir = prepareOutputDirectory(flags.out ?? join('data', 'walk-forward', id), flags.out === undefined ? undefined : '--out');
      const runner = sweepRunner({ db: config.db, file: loaded.file, settings, workers: flags.workers, logger: runLogger });
      // Its results are written at the end: a Ctrl-C keeps nothing, says so, and leaves no empty folder (trial 34: exit 130 without a word).
      let windowsDone = 0;
      const stopListening = exitOnInterrupt(() => {
        if (readdirSync(dir).length === 0) rmSync(dir, { recursive: true, force: true });
        return `walk-forward interrupted after ${windowsDone} of ${windows.length} windows; nothing was kept (its results are written at the end): the same command runs it again`;
      });
      const r = await walkForward({
        windows,
        grid,
        metric: flags.metric,
        run: runner,
        onWindow: (done, total) => {
          windowsDone = done;
          logger.info({ done, total }, `walk-forward: window ${done}/${total}`);
        },
      }).finally(() => {
        stopListening();
        return runner.close();
      });
      sayUnshown('walk-forward');
      const out = {
        format: 'indexbot-walk-forward/1',
        id,
        strategy: loaded.strategy.name,
        metric: r.metric,
        settings: {
          from: new Date(from).toISOString(),
          to: new Date(to).toISOString(),
          trainDays: flags.train / 86_400_000,
          testDays: flags.test / 86_400_000,
          stepDays: (flags.step ?? flags.test) / 86_400_000,
          anchored: flags.anchored ?? false,
          candidates: grid.length,
        },
        windows: r.windows.map((w) => ({
          train: [new Date(w.trainFrom).toISOString(), new Date(w.trainTo).toISOString()],
          test: [new Date(w.testFrom).toISOString(), new Date(w.testTo).toISOString()],
          params: w.params,
          inSample: w.inSample,
          outOfSample: w.outOfSample,
          testReturn: w.testReturn,
          failedInTraining: w.failedInTraining,
          failedInTest: w.failedInTest,
        })),
        inSampleMean: r.inSampleMean,
        outOfSample: r.outOfSample.metrics,
        equity: r.outOfSample.equity.map((p) => [p.t, p.value, p.exposure]),
      };
      writeFileSync(join(dir, 'walk-forward.json'), `${JSON.stringify(out, null, 1)}\n`);
      writeFileSync(
        join(dir, 'walk-forward.html'),
        renderWalkForwardPage(`walk-forward ${loaded.strategy.name} by ${r.metric}`, r, (v) => formatMetric(r.metric, v), swept),
      );
      const failedIn = (w: (typeof r.windows)[number]) => w.failedInTraining + w.failedInTest;
      const failing = r.windows.filter((w) => failedIn(w) > 0);
      const reportFailures = () =>
        failOnHandlerErrors(
          `${failing.length} of ${r.windows.length} windows`,
          failing.reduce((n, w) => n + failedIn(w), 0),
          `window ${r.windows.indexOf(failing[0]!) + 1}; params that failed rank last; \`indexbot backtest\` of one names the error`,
          flags.allowFailures,
        );
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
        reportFailures();
        return;
      }
      const f = (v: number | null) => formatMetric(r.metric, v);
      const rows = r.windows.map((w, i) => [
        String(i + 1),
        `${day(w.trainFrom)} .. ${day(w.trainTo)}`,
        `${day(w.testFrom)} .. ${day(w.testTo)}`,
        JSON.stringify(splitParams(w.params, swept).chosen),
        f(w.inSample),
        f(w.outOfSample),
        pct(w.testReturn),
      ]);
      const m = r.outOfSample.metrics;
      const { fixed: same } = splitParams(r.windows[0]?.params, swept);
      const stitched = (m as unknown as Record<string, number | null | undefined>)[r.metric];
      const marks = shortWindowMarks(r);
      const lines = [
        `walk-forward ${loaded.strategy.name}: ${windows.length} windows (${flags.anchored ? 'anchored' : 'rolling'}), ${grid.length} candidates each, best by ${r.metric}`,
        formatTable([['#', 'train', 'test', 'chosen params', `${r.metric} in${marks.inSample}`, `${r.metric} out${marks.outOfSample}`, 'test return'], ...rows]),
        ...(Object.keys(same).length === 0 ? [] : [`the same in every window: ${JSON.stringify(same)}`]),
        '',
        `${r.metric}: in-sample mean ${f(r.inSampleMean)}${stitched === undefined ? '' : `, out-of-sample stitched ${f(stitched)}`}`,
        `out-of-sample, stitched: return ${pct(m.totalReturn)}, CAGR${marks.stitched} ${pct(m.cagr)}, Sharpe${marks.stitched} ${fixed(m.sharpe)}, Sortino ${fixed(m.sortino)}, max drawdown ${pct(m.maxDrawdown)}, ${fixed(m.days, 1)} days`,
        ...marks.warnings.map((w) => `(!) ${w}`),
        `written: ${join(dir, 'walk-forward.json')}, ${join(dir, 'walk-forward.html')}`,
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
      reportFailures();
    } finally {
      cache.close();
    }
  });
}
