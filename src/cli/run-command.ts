import type { Command } from 'commander';
import { type ConfigFlags, loadConfig, permissionWarnings } from '../config/index.ts';
import { createLogger } from '../core/index.ts';
import { startDaemon } from './daemon.ts';
import { untilSignal, withConfigFlags } from './options.ts';

export function registerRunCommand(program: Command): void {
  withConfigFlags(
    program.command('run').description('the daemon: poll, cache in SQLite, detect rebalances, run strategies until SIGINT/SIGTERM'),
    'config',
    'baseUrl',
    'db',
    'tier',
    'logFormat',
    'logLevel',
    'strategies',
  ).action(async (flags: ConfigFlags) => {
      const config = loadConfig(flags);
      const logger = createLogger({ level: config.logLevel, format: config.logFormat });
      for (const warning of permissionWarnings(config)) logger.warn({}, warning);
      const daemon = await startDaemon(config, { logger });
      const signal = await untilSignal();
      logger.info({ signal }, 'stopping: no new polls; waiting for those in flight');
      await daemon.stop();
    });
}
