import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { MAX_WORKERS, fixed, formatTable, pct } from '../backtest/index.ts';
import { type ConfigFlags, loadConfig } from '../config/index.ts';
import { stableHash } from '../detect/index.ts';
import { RANK_METRICS, type RankMetric, SAMPLERS, type Sampler, decode, optimize, ranked, readSpace, readTrials, renderOptimizePage, shortValue, sweepRunner } from '../research/index.ts';
import { SnapshotStore } from '../store/index.ts';
import { strategySourceHash } from '../strategy/index.ts';
import {
  type BacktestInputFlags,
  MAX_GRID_SETS,
  failOnHandlerErrors,
  paramsOption,
  paramsSource,
  refuseFixedAndVaried,
  researchInputs,
  resolveStrategy,
  withBacktestInputOptions,
  withParamsFrom,
} from './backtest-command.ts';
import { LOG_FLAGS, choiceOption, exitOnInterrupt, intOption, loggerFor, prepareOutputDirectory, withConfigFlags } from './options.ts';

interface OptimizeFlags extends ConfigFlags, BacktestInputFlags {
  strategy: string;
  space: string;
  trials: number;
  metric: RankMetric;
  sampler: Sampler;
  seed: number;
  startup: number;
  batch: number;
  workers?: number;
  /** Each --params given, in order; none given: undefined (so --help shows no default). */
  params?: Record<string, unknown>[];
  out?: string;
  top: number;
  json?: boolean;
  allowFailures?: boolean;
}

export function registerOptimizeCommand(program: Command): void {
  withConfigFlags(
    withBacktestInputOptions(
      program
        .command('optimize')
        .description('search a strategy params space (random, or TPE) for the best figure; trials are kept as they finish, so a search resumes where it stopped')
        .requiredOption('--strategy <name|path>', 'a strategy name from the strategies directory, or a strategy file')
        .requiredOption('--space <file>', 'JSON file: param -> [min, max], {min, max, log?, int?} or {values: [...]}')
        .requiredOption('--trials <n>', 'trials in all (those already in the study count)', intOption(1, MAX_GRID_SETS)),
    )
      .option('--metric <name>', `what to maximise: ${RANK_METRICS.join(', ')}`, choiceOption(RANK_METRICS), 'sharpe')
      .option('--sampler <name>', `${SAMPLERS.join(' or ')} (Tree-structured Parzen Estimator after the random start)`, choiceOption(SAMPLERS), 'tpe')
      .option('--seed <n>', 'the same seed gives the same trials', intOption(0, 2 ** 32 - 1), 1)
      .option('--startup <n>', 'random trials before TPE takes over', intOption(1, 10_000), 10)
      .option('--batch <n>', 'trials proposed together from the same finished trials and run at once (part of the study: it changes the trials)', intOption(1, MAX_WORKERS), 1)
      .option(
        '--workers <n>',
        `a batch's trials at once, on this thread and worker threads (default the number of cores, ${availableParallelism()}, fewer for a short batch; never changes the trials)`,
        intOption(1, MAX_WORKERS),
      )
      .option('--params <json>', "fixed params beside the sampled ones (a param in both is refused), over the config's", paramsOption)
      .option('--top <n>', 'best trials to print', intOption(1, 1000), 10)
      .option('--out <dir>', 'the study directory (default data/optimize/<study id>)')
      .option('--json', 'print the trials, best first, as JSON')
      .option('--allow-failures', 'exit 0 even when strategy handlers failed on events (such trials rank last)'),
    'config',
    'db',
    ...LOG_FLAGS,
    'strategies',
  ).action(async (flags: OptimizeFlags) => {
    // Listening from the start: a Ctrl-C while the strategy loads or the cache opens is said too, not left to end the process.
    let study: string | undefined;
    const stopListening = exitOnInterrupt(() =>
      study === undefined
        ? 'optimize interrupted before its first trial; nothing was kept'
        : `optimize interrupted: ${readTrials(study).length} of ${flags.trials} trials kept in ${join(study, 'trials.jsonl')}; run the same command again to go on from there`,
    );
    try {
      const config = loadConfig(flags, process.env, { server: false, services: false });
      const logger = loggerFor(config);
      const loaded = await resolveStrategy(flags.strategy, config, logger);
      const space = readSpace(flags.space, loaded.strategy);
      refuseFixedAndVaried(
        flags.params ?? [],
        space.map((d) => d.key),
        `--space ${flags.space}`,
      );
      const configParams = config.strategies.params[loaded.strategy.name] ?? {};
      const givenParams: Record<string, unknown> = Object.assign({}, ...(flags.params ?? []));
      const base = { ...configParams, ...givenParams };
      // The fixed params, with the middle of the space, pass the schema before any replay.
      withParamsFrom(
        loaded.strategy,
        loaded.file,
        { ...base, ...Object.fromEntries(space.map((d) => [d.key, decode(d, 0.5)])) },
        paramsSource({ params: { set: givenParams, index: 0, total: 1 }, config: configParams }),
      );
      const cache = SnapshotStore.open(config.db, { readonly: true });
      try {
        const { from, to, settings, logger: runLogger, sayUnshown } = researchInputs(flags, config, cache, logger, loaded.strategy);
        const identity = {
          strategy: loaded.strategy.name,
          sourceHash: strategySourceHash(loaded.file),
          space,
          base,
          metric: flags.metric,
          sampler: flags.sampler,
          seed: flags.seed,
          startup: flags.startup,
          batch: flags.batch,
          range: { from, to, indexes: settings.indexes, interval: settings.interval, cash: settings.cash, feeBps: settings.feeBps, slippageBps: settings.slippageBps },
        };
        const dir = prepareOutputDirectory(flags.out ?? join('data', 'optimize', `opt_${stableHash(identity).slice(0, 12)}`), flags.out === undefined ? undefined : '--out');
        let resumed: number | undefined;
        study = dir;
        const runner = sweepRunner({ db: config.db, file: loaded.file, settings, workers: flags.workers, logger: runLogger });
        const trials = await optimize({
          dir,
          identity,
          space,
          base,
          trials: flags.trials,
          metric: flags.metric,
          sampler: flags.sampler,
          seed: flags.seed,
          startup: flags.startup,
          from,
          to,
          batch: flags.batch,
          run: runner,
          onTrial: (t, done) => {
            resumed ??= done - 1;
            logger.info({ trial: t.n, score: t.score, params: t.params }, `optimize: ${done} of ${flags.trials} trials done`);
          },
        }).finally(() => runner.close());
        sayUnshown('optimize');
        const title = `optimize ${loaded.strategy.name} by ${flags.metric} (${flags.sampler}, seed ${flags.seed})`;
        writeFileSync(join(dir, 'optimize.html'), renderOptimizePage(title, flags.metric, trials));
        const best = ranked(trials);
        const failing = trials.filter((t) => (t.failedEvents ?? 0) > 0);
        const reportFailures = () =>
          failOnHandlerErrors(
            `${failing.length} of ${trials.length} trials`,
            failing.reduce((n, t) => n + (t.failedEvents ?? 0), 0),
            `trial ${failing[0]?.n} with ${JSON.stringify(failing[0]?.params)}; such trials rank last; \`indexbot backtest\` of one names the error`,
            flags.allowFailures,
          );
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(best, null, 1)}\n`);
          reportFailures();
          return;
        }
        const keys = space.map((d) => d.key);
        const rows = best
          .slice(0, flags.top)
          .map((t, i) => [
            String(i + 1),
            String(t.n),
            ...keys.map((k) => shortValue(t.params[k])),
            fixed(t.score, 4),
            pct(t.metrics.totalReturn),
            fixed(t.metrics.sharpe),
            pct(t.metrics.maxDrawdown),
            String(t.metrics.trades),
          ]);
        const fresh = trials.length - (resumed ?? trials.length);
        process.stdout.write(
          `${[
            `${title}: ${trials.length} trials (${fresh} run now, ${trials.length - fresh} from the study${trials.length > flags.trials ? `, which held more than --trials ${flags.trials}: all are ranked` : ''})`,
            formatTable([['rank', 'trial', ...keys, `score (${flags.metric})`, 'return', 'Sharpe', 'max DD', 'fills'], ...rows]),
            `study: ${dir} (trials.jsonl, optimize.html)`,
          ].join('\n')}\n`,
        );
        reportFailures();
      } finally {
        cache.close();
      }
    } finally {
      stopListening();
    }
  });
}
