import { relative } from 'node:path';
import type { Command } from 'commander';
import { amount, failureLine, formatTable } from '../backtest/index.ts';
import { type ConfigFlags, loadConfig } from '../config/index.ts';
import { type Decision, checkLookahead } from '../research/index.ts';
import { SnapshotStore } from '../store/index.ts';
import { minuteText } from '../core/index.ts';
import { type BacktestInputFlags, backtestInputs, failOnHandlerErrors, manyRunsLogger, paramsOption, resolveStrategy, withBacktestInputOptions } from './backtest-command.ts';
import { LOG_FLAGS, intOption, loggerFor, withConfigFlags } from './options.ts';

interface CheckLookaheadFlags extends ConfigFlags, BacktestInputFlags {
  strategy: string;
  /** Each --params given, in order; none given: undefined (so --help shows no default). */
  params?: Record<string, unknown>[];
  maxChecks: number;
  json?: boolean;
  allowFailures?: boolean;
}

export function registerCheckLookaheadCommand(program: Command): void {
  withConfigFlags(
    withBacktestInputOptions(
      program
        .command('check-lookahead')
        .description('replay a strategy, then replay it again on the cache cut at each of its decisions; report decisions that change (exit 1) and wall-clock reads')
        .requiredOption('--strategy <name|path>', 'a strategy name from the strategies directory, or a strategy file'),
    )
      .option('--params <json>', "strategy params over the config's", paramsOption)
      .option('--max-checks <n>', 'most replays on a cut cache; past it, decision times are picked evenly', intOption(1, 10_000), 50)
      .option('--json', 'print the result as JSON')
      .option('--allow-failures', 'exit 0 even when a strategy handler failed on events (skipped: the check covers what the rest did)'),
    'config',
    'db',
    ...LOG_FLAGS,
    'strategies',
  ).action(async (flags: CheckLookaheadFlags) => {
    const config = loadConfig(flags, process.env, { server: false, services: false });
    const logger = loggerFor(config);
    // Before the strategy module first runs: globals its top level creates count as its own.
    const globalsBefore = new Set(Object.getOwnPropertyNames(globalThis));
    const { strategy, file } = await resolveStrategy(flags.strategy, config, logger);
    const params = Object.assign({}, config.strategies.params[strategy.name] ?? {}, ...(flags.params ?? []));
    const cache = SnapshotStore.open(config.db, { readonly: true });
    let inputs: ReturnType<typeof backtestInputs>;
    try {
      inputs = backtestInputs(flags, config, cache, logger, strategy);
    } finally {
      cache.close();
    }
    // Over the part of the range the cache holds, as the replays see it (a larger hole at either end stopped above unless --allow-gaps).
    const { cache: _, held, logger: runLogger, ...asked } = inputs;
    const runs = manyRunsLogger(config, runLogger, logger);
    const rest = { ...asked, ...held, logger: runs.logger };
    const r = await checkLookahead({
      ...rest,
      cachePath: config.db,
      strategyFile: file,
      params,
      maxChecks: flags.maxChecks,
      globalsBefore,
      onCheck: (done, total) => logger.debug({ done, total }, 'lookahead: replayed on a cut cache'),
    });
    runs.sayUnshown('check-lookahead');
    if (flags.json) process.stdout.write(`${JSON.stringify(r, null, 1)}\n`);
    else {
      const lines = [
        `check-lookahead ${r.strategy} ${minuteText(rest.from)} .. ${minuteText(rest.to)}: ${r.decisions} decision${r.decisions === 1 ? '' : 's'} at ${r.decisionTimes} time${r.decisionTimes === 1 ? '' : 's'}; replayed on the cache cut at ${r.checked} of them`,
      ];
      const skipped = r.failedEvents > 0 ? ` (of what its handlers did: they failed on ${r.failedEvents} event(s), skipped)` : '';
      const decisionRow = (d: Decision) => [minuteText(d.at), d.eventId, d.side, d.instrument, d.outcome, amount(d.quantity)];
      if (r.differences.length === 0)
        lines.push(
          r.decisions === 0
            ? `no decisions to check: the strategy placed no order in this range${skipped}`
            : // Not a pass while the command fails for the events skipped (trial 34: PASS on stdout, exit 1): what those handlers would have decided is unchecked.
              `${r.failedEvents > 0 && !flags.allowFailures ? 'INCOMPLETE' : 'PASS'} no decision changed when the cache was cut at it${skipped}`,
        );
      else {
        lines.push(`FAIL ${r.differences.length} decision(s) differ between the whole cache and the cache cut at their time: the strategy learns from outside its context`);
        const rows = r.differences.map((d) => [minuteText(d.cutAt), ...decisionRow(d.decision), d.seenIn]);
        lines.push(formatTable([['cut at', 'decided at', 'event', 'side', 'instrument', 'outcome', 'quantity', 'made by'], ...rows]));
      }
      if (r.carriedOver.length > 0) {
        lines.push(
          `FAIL ${r.carriedOver.length} decision(s) differ when the whole range runs again on the same loaded module, as a sweep's runs do: the strategy keeps state between runs outside ctx.state (a module variable?), so a sweep's results depend on the order of its runs`,
        );
        const rows = r.carriedOver.map((d) => [...decisionRow(d.decision), d.seenIn === 'full only' ? 'first run' : 'second run']);
        lines.push(formatTable([['decided at', 'event', 'side', 'instrument', 'outcome', 'quantity', 'made by'], ...rows]));
      }
      for (const c of r.clockCalls) {
        lines.push(`WARN ${c.call} called ${c.count} time(s) at ${relative(process.cwd(), c.location)}: a backtest's time is ctx.clock.now(); the wall clock differs on every run`);
      }
      if (r.globals.length > 0) lines.push(`WARN the strategy created globals (${r.globals.join(', ')}): they outlive a run and can carry the future into the next`);
      process.stdout.write(`${lines.join('\n')}\n`);
    }
    if (r.differences.length > 0 || r.carriedOver.length > 0) process.exitCode = 1;
    failOnHandlerErrors('the check', r.failedEvents, `first: ${failureLine(r.firstFailure ?? '')}; the check covers only what the other events led to`, flags.allowFailures);
  });
}
