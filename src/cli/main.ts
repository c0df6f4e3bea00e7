import { Command, CommanderError } from 'commander';
import { IndexbotError } from '../core/index.ts';
import { storeFailure } from '../store/index.ts';
import { registerBackfillCommand } from './backfill-command.ts';
import { registerBacktestCommand } from './backtest-command.ts';
import { registerCheckLookaheadCommand } from './check-lookahead-command.ts';
import { registerConfigCommand } from './config-command.ts';
import { registerWalkForwardCommand } from './walk-forward-command.ts';
import { registerOptimizeCommand } from './optimize-command.ts';
import { registerDoctorCommand } from './doctor-command.ts';
import { registerDemoCommand } from './demo-command.ts';
import { registerLoginCommand } from './login-command.ts';
import { packageJson } from './package-files.ts';
import { registerProjectCommands } from './project-commands.ts';
import { registerRunCommand } from './run-command.ts';
import { registerSandboxCommand } from './sandbox-command.ts';
import { registerStatusCommand } from './status-command.ts';
import { registerStrategiesCommand } from './strategies-command.ts';

const program = new Command();
program.name('indexbot').description('Trading-bot framework for the Index Fund Data Service').version(packageJson().version).exitOverride();
// Commander's own errors (an unknown flag, a bad value) look like ours: one line, the code last.
// Set before the commands are added, which copy it.
program.configureOutput({
  outputError: (text, write) =>
    write(
      `indexbot: ${text
        .replace(/^error: /, '')
        .trim()
        .replace(/\s*\n\s*/g, ' ')} [USAGE_INVALID]\n`,
    ),
});

registerDemoCommand(program);
registerRunCommand(program);
registerStatusCommand(program);
registerLoginCommand(program);
registerBackfillCommand(program);
registerBacktestCommand(program);
registerCheckLookaheadCommand(program);
registerWalkForwardCommand(program);
registerOptimizeCommand(program);
registerDoctorCommand(program);
registerStrategiesCommand(program);
registerSandboxCommand(program);
registerProjectCommands(program);
registerConfigCommand(program);

/** The exit codes README.md documents (sysexits.h): usage, software bug, temporary, config. */
const EXIT = { usage: 64, bug: 70, temporary: 75, config: 78 } as const;

try {
  await program.parseAsync(process.argv);
} catch (thrown) {
  // Commander already printed its one line; help and --version exit 0.
  if (thrown instanceof CommanderError) process.exit(thrown.exitCode === 0 ? 0 : EXIT.usage);
  const e = storeFailure(thrown);
  if (e instanceof IndexbotError) {
    process.stderr.write(`indexbot: ${e.message} [${e.code}]\n`);
    process.exit(e.kind === 'temporary' ? EXIT.temporary : e.kind === 'input' ? EXIT.usage : EXIT.config);
  }
  // Not one of ours: a bug. One line by default; the stack trace on demand, to report it.
  const debug = process.env.INDEXBOT_DEBUG === '1' || /^(debug|trace)$/.test(process.env.INDEXBOT_LOG_LEVEL ?? '') || /--log-level[= ](debug|trace)\b/.test(process.argv.join(' '));
  const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  process.stderr.write(
    debug && e instanceof Error ? `indexbot: unexpected error: ${e.stack}\n` : `indexbot: unexpected error: ${message} (a bug; INDEXBOT_DEBUG=1 prints its stack trace) [INTERNAL]\n`,
  );
  process.exit(EXIT.bug);
}
