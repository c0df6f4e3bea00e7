import { Command, CommanderError } from 'commander';
import { IndexbotError } from '../core/index.ts';
import { storeFailure } from '../store/index.ts';
import { registerBackfillCommand } from './backfill-command.ts';
import { registerBacktestCommand } from './backtest-command.ts';
import { registerCheckLookaheadCommand } from './check-lookahead-command.ts';
import { registerWalkForwardCommand } from './walk-forward-command.ts';
import { registerDoctorCommand } from './doctor-command.ts';
import { registerDemoCommand } from './demo-command.ts';
import { registerLoginCommand } from './login-command.ts';
import { registerRunCommand } from './run-command.ts';
import { registerSandboxCommand } from './sandbox-command.ts';
import { registerStatusCommand } from './status-command.ts';
import { registerStrategiesCommand } from './strategies-command.ts';

const program = new Command();
program.name('indexbot').description('Trading-bot framework for the Index Fund Data Service').showHelpAfterError().exitOverride();

registerDemoCommand(program);
registerRunCommand(program);
registerStatusCommand(program);
registerLoginCommand(program);
registerBackfillCommand(program);
registerBacktestCommand(program);
registerCheckLookaheadCommand(program);
registerWalkForwardCommand(program);
registerDoctorCommand(program);
registerStrategiesCommand(program);
registerSandboxCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (thrown) {
  if (thrown instanceof CommanderError) process.exit(thrown.exitCode);
  const e = storeFailure(thrown);
  if (e instanceof IndexbotError) {
    process.stderr.write(`indexbot: ${e.message} [${e.code}]\n`);
    process.exit(e.kind === 'temporary' ? 75 : 78);
  }
  throw e;
}
