import { existsSync } from 'node:fs';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { describeEvent } from '../alerts/index.ts';
import { type Config, DEFAULT_CONFIG_PATH, DEFAULT_READY_MAX_AGE_S, isLoopback, parseListenAddress } from '../config/index.ts';
import { MAX_TIMER_MS, createLogger, plainText, systemClock } from '../core/index.ts';
import { MAX_SPEED, startSandbox } from '../sandbox/index.ts';
import { refuseForeignDatabase } from '../store/index.ts';
import { startDaemon } from './daemon.ts';
import { intOption, numberOption, seedOption, untilSignal } from './options.ts';
import { EXAMPLE_STRATEGIES } from './package-files.ts';

interface DemoOptions {
  watch: boolean;
  speed: number;
  seed: number;
  durationS: number | undefined;
  db: string;
  strategies: string;
  http: { host: string; port: number };
}

/** The demo serves its dashboard without a token, so on loopback only. */
function loopbackAddress(raw: string): { host: string; port: number } {
  const address = parseListenAddress(raw);
  if (!address || !isLoopback(address.host)) throw new InvalidArgumentError(`expected a loopback host:port such as 127.0.0.1:9464, got "${raw}"`);
  return address;
}

/**
 * The first-run experience: a sandbox on a free loopback port with a fast clock, and the
 * daemon against it, printing a readable line per event. No config, no account, and it
 * writes only its database under data/.
 */
export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('the sandbox in-process with a fast clock and the bot against it (what `npm start` runs)')
    .option('--speed <x>', `simulated seconds per real second, 1 to ${MAX_SPEED}`, numberOption(1, MAX_SPEED), 1440)
    .option('--seed <n>', 'seed of the simulated market', seedOption, 1)
    .addOption(new Option('--duration-s <s>', 'stop by itself after this many seconds').env('INDEXBOT_DEMO_DURATION_S').argParser(intOption(1, Math.floor(MAX_TIMER_MS / 1000))))
    .option('--db <file>', 'SQLite file of the demo, started afresh each run: a new file or one a demo made', 'data/demo.db')
    .option('--strategies <dir>', "strategy modules to run (default ./strategies, else the package's examples)", 'strategies')
    .option('--watch', 'reload a strategy whose file changes, without a restart', false)
    .addOption(new Option('--http <addr>', 'loopback host:port of the dashboard and API').argParser(loopbackAddress).default({ host: '127.0.0.1', port: 0 }, '127.0.0.1 on a free port'))
    .action(async (opts: DemoOptions, command: Command) => {
      // data/demo.db is the demo's whoever made it; a file named with --db only if a demo made it.
      const demoDatabase = { evenUnmarked: command.getOptionValueSource('db') === 'default' };
      // Checked again under the lock; here so that a refusal comes before the sandbox starts.
      refuseForeignDatabase(opts.db, demoDatabase.evenUnmarked);
      // A project without strategies of its own yet (just installed, before `indexbot init`) runs the examples.
      const examples = command.getOptionValueSource('strategies') === 'default' && !existsSync(opts.strategies);
      const strategiesDir = examples ? EXAMPLE_STRATEGIES : opts.strategies;
      const sandbox = await startSandbox({ port: 0, speed: opts.speed, seed: opts.seed });
      const out = (line: string) => process.stdout.write(`${line}\n`);
      const simTime = () => new Date(sandbox.clock.now()).toISOString().slice(0, 16).replace('T', ' ');
      out(`indexbot demo: sandbox at ${sandbox.baseUrl}, simulated clock x${opts.speed} (a simulated day every ${(86400 / opts.speed).toFixed(0)} s), cache ${opts.db}`);
      if (examples) out("No ./strategies here: running the package's example strategies (`npx indexbot init` makes a project with one of your own).");
      const config: Config = {
        file: undefined,
        baseUrl: sandbox.baseUrl,
        tier: 'premium',
        tierExplicit: true,
        enterpriseLimits: undefined,
        windowMs: 60_000,
        db: opts.db,
        indexes: 'all',
        intervalsMs: { rebalancing: 2_000, composition: 3_000, performance: 10_000, indexes: 30_000, tokens: 30_000 },
        driftThreshold: 0.05,
        shutdownGraceMs: 5_000,
        retentionDays: 30,
        http: { ...opts.http, source: `--http ${opts.http.host}:${opts.http.port}`, fromFlag: true, token: undefined, readyMaxAgeS: DEFAULT_READY_MAX_AGE_S, maxConnections: 1024 },
        logLevel: 'warn',
        logFormat: undefined,
        apiKey: sandbox.keys.premium,
        walletKeypairPath: undefined,
        // Events already print above; a console sink would print each rebalance twice.
        alerts: { sinks: [], sinkNames: [], giveUpAfterMs: 86_400_000 },
        strategies: {
          dir: strategiesDir,
          explicit: true,
          onError: 'fail',
          // Its own params for the example strategy: a --strategies directory without it (a user's project) is no error, nor worth a warning.
          onUnknownName: 'ignore',
          params: { 'rebalance-front-run': { holdHours: 6 } },
          disabled: [],
          timeoutMs: 5_000,
          maxAttempts: 3,
          paper: { initialCash: 10_000, feeBps: 10, slippageBps: 5 },
        },
      };
      // Listening before the start, as `run` does, and so before "Ctrl-C to stop" is printed.
      const stopAsked = untilSignal();
      const daemon = await startDaemon(config, {
        logger: createLogger({ level: 'warn' }),
        onEvents: (events) => {
          for (const e of events) if (e.type !== 'performance.updated') out(`[sim ${simTime()}] event  ${e.type.padEnd(20)} ${describeEvent(e)}`);
        },
        strategyClock: { ...systemClock, now: () => sandbox.clock.now() },
        watch: opts.watch,
        demoDatabase,
        onReload: (strategy, refused) => out(refused ? `reload ${strategy}: kept the running version: ${refused}` : `reload ${strategy}: the next event reaches the new code`),
        onAlert: (strategy, message) => out(`[sim ${simTime()}] alert  ${plainText(`${strategy}: ${message}`)}`),
        onFill: (strategy, f, label) =>
          out(`[sim ${simTime()}] fill   ${strategy}: paper ${f.side} ${f.quantity.toPrecision(5)} ${label} at ${f.price.toPrecision(5)} USD (fee ${f.feeUsd.toFixed(2)})`),
      });
      // An empty strategies folder: said so, not "with strategies ;" (trial 25).
      const running = daemon.strategies.length > 0 ? `with strategies ${daemon.strategies.join(', ')}` : `with no strategy (none in ${config.strategies.dir})`;
      out(`Following ${daemon.indexes.join(', ')} ${running}; events, alerts and paper fills print as they happen. Ctrl-C to stop.`);
      out(`Dashboard: ${daemon.httpUrl}/  (metrics at ${daemon.httpUrl}/metrics)`);
      // Trial 36: a config file beside it, even a broken one, was passed over without a word.
      if (existsSync(DEFAULT_CONFIG_PATH)) out(`The demo runs on its own settings: ${DEFAULT_CONFIG_PATH} is for \`indexbot run\` (\`indexbot doctor\` checks it).`);
      const stop = await Promise.race([
        stopAsked,
        new Promise<string>((resolve) => {
          if (opts.durationS) setTimeout(() => resolve('duration reached'), opts.durationS * 1000).unref();
        }),
      ]);
      await daemon.stop();
      await sandbox.close();
      out(`demo stopped (${stop}); run \`npx indexbot status --db ${opts.db}\` to see what it cached`);
    });
}
