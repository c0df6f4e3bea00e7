import { hostname } from 'node:os';
import { Command, CommanderError } from 'commander';
import { IndexbotError, plainText, secretValues, withoutSecrets } from '../core/index.ts';
import { EXIT } from './options.ts';
import { packageJson } from './package-files.ts';

type Register = (program: Command) => void;

/**
 * Each command's module, loaded on demand: a command then loads only what it runs (the store,
 * the sandbox, the backtester...), not every other command's dependencies. In the listing
 * order of `--help`.
 */
const COMMANDS: readonly (readonly [names: readonly string[], load: () => Promise<Register>])[] = [
  [['demo'], async () => (await import('./demo-command.ts')).registerDemoCommand],
  [['run'], async () => (await import('./run-command.ts')).registerRunCommand],
  [['status'], async () => (await import('./status-command.ts')).registerStatusCommand],
  [['login'], async () => (await import('./login-command.ts')).registerLoginCommand],
  [['backfill'], async () => (await import('./backfill-command.ts')).registerBackfillCommand],
  [['backtest'], async () => (await import('./backtest-command.ts')).registerBacktestCommand],
  [['check-lookahead'], async () => (await import('./check-lookahead-command.ts')).registerCheckLookaheadCommand],
  [['walk-forward'], async () => (await import('./walk-forward-command.ts')).registerWalkForwardCommand],
  [['optimize'], async () => (await import('./optimize-command.ts')).registerOptimizeCommand],
  [['doctor'], async () => (await import('./doctor-command.ts')).registerDoctorCommand],
  [['strategies'], async () => (await import('./strategies-command.ts')).registerStrategiesCommand],
  [['forget'], async () => (await import('./forget-command.ts')).registerForgetCommand],
  [['sandbox'], async () => (await import('./sandbox-command.ts')).registerSandboxCommand],
  [['init', 'new-strategy'], async () => (await import('./project-commands.ts')).registerProjectCommands],
  [['config'], async () => (await import('./config-command.ts')).registerConfigCommand],
];

/**
 * The format asked for by `--log-format` or INDEXBOT_LOG_FORMAT (the deploy files set json):
 * the command's last line, an error's, is then a JSON line as its logs are, not plain text
 * among them for a log shipper to trip on. A config file's `log.format` is not read here:
 * the line may say the file is what failed.
 */
const jsonLastLine = (() => {
  const flag = process.argv.findIndex((a) => a === '--log-format' || a.startsWith('--log-format='));
  const asked = flag === -1 ? process.env.INDEXBOT_LOG_FORMAT : process.argv[flag]!.includes('=') ? process.argv[flag]!.split('=')[1] : process.argv[flag + 1];
  return asked === 'json';
})();

/** A failure's last line: `indexbot: <message> [CODE]`, or in JSON mode a pino line (level 60, fatal) with `code` and `exitCode`. */
function writeLastLine(message: string, code: string, exitCode: number): void {
  if (!jsonLastLine) {
    process.stderr.write(`indexbot: ${message} [${code}]\n`);
    return;
  }
  const secrets = secretValues();
  process.stderr.write(`${JSON.stringify({ level: 60, time: Date.now(), pid: process.pid, hostname: hostname(), code, exitCode, msg: withoutSecrets(message, secrets) })}\n`);
}

const program = new Command();
program.name('indexbot').description('Trading-bot framework for the Index Fund Data Service').version(packageJson().version).exitOverride();
// Commander's own errors (an unknown flag, a bad value) look like ours: one line, the code last.
// Set before the commands are added, which copy it.
program.configureOutput({
  outputError: (text) =>
    writeLastLine(
      text
        .replace(/^error: /, '')
        .trim()
        .replace(/\s*\n\s*/g, ' '),
      'USAGE_INVALID',
      EXIT.usage,
    ),
});

// A mistyped flag is named, with commander's suggestion, before the required flag it was meant
// to be: `backtest --stratgy x` said only "required option '--strategy' not specified" (trial 24).
program.hook('preSubcommand', (_program, command) => {
  const known = new Set([...command.options, ...program.options].flatMap((o) => [o.long, o.short]));
  const flags = process.argv.slice(3);
  const end = flags.indexOf('--');
  const mistyped = (end === -1 ? flags : flags.slice(0, end)).some((a) => a.startsWith('--') && a !== '--help' && !known.has(a.split('=')[0]));
  if (mistyped) for (const option of command.options) option.mandatory = false;
});

// The command named first on the line, alone; anything else (help, --version, a typo commander
// answers with the nearest name) gets them all.
const named = COMMANDS.filter(([names]) => names.includes(process.argv[2] ?? ''));
for (const register of await Promise.all((named.length > 0 ? named : COMMANDS).map(([, load]) => load()))) register(program);

try {
  await program.parseAsync(process.argv);
} catch (thrown) {
  // Commander already printed its one line; help and --version exit 0.
  if (thrown instanceof CommanderError) process.exit(thrown.exitCode === 0 ? 0 : EXIT.usage);
  const e = (await import('../store/index.ts')).storeFailure(thrown);
  // Whoever wrote the message (a strategy's throw may quote the key it read), no credential's value reaches the terminal.
  const secrets = secretValues();
  if (e instanceof IndexbotError) {
    // One line, whatever the message quotes (a file's text in a JSON parser's words, say).
    const exitCode = e.kind === 'temporary' ? EXIT.temporary : e.kind === 'input' ? EXIT.usage : EXIT.config;
    writeLastLine(withoutSecrets(plainText(e.message), secrets), e.code, exitCode);
    process.exit(exitCode);
  }
  // Not one of ours: a bug. One line by default; the stack trace on demand, to report it.
  const debug = process.env.INDEXBOT_DEBUG === '1' || /^(debug|trace)$/.test(process.env.INDEXBOT_LOG_LEVEL ?? '') || /--log-level[= ](debug|trace)\b/.test(process.argv.join(' '));
  const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  if (debug && e instanceof Error && !jsonLastLine) process.stderr.write(withoutSecrets(`indexbot: unexpected error: ${e.stack}\n`, secrets));
  else writeLastLine(withoutSecrets(`unexpected error: ${debug && e instanceof Error ? e.stack : `${message} (a bug; INDEXBOT_DEBUG=1 prints its stack trace)`}`, secrets), 'INTERNAL', EXIT.bug);
  process.exit(EXIT.bug);
}
