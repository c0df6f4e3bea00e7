import type { Command } from 'commander';
import { type ConfigFlags, loadConfig, permissionWarnings } from '../config/index.ts';
import { startDaemon } from './daemon.ts';
import { LOG_FLAGS, SERVER_FLAGS, loggerFor, untilSignal, withConfigFlags } from './options.ts';

export function registerRunCommand(program: Command): void {
  withConfigFlags(program.command('run').description('the daemon: poll, cache in SQLite, detect rebalances, run strategies until SIGINT/SIGTERM'), ...SERVER_FLAGS, ...LOG_FLAGS, 'strategies')
    .option('--http <addr>', 'serve /metrics, /healthz, /readyz, /api/v1 and the dashboard on host:port, e.g. 127.0.0.1:9464 (config: http.listen)')
    .action(async (flags: ConfigFlags) => {
      const config = loadConfig(flags);
      const logger = loggerFor(config);
      for (const warning of permissionWarnings(config)) logger.warn({}, warning);
      const daemon = await startDaemon(config, { logger });
      const signal = await untilSignal();
      logger.info({ signal }, 'stopping: no new polls; waiting for those in flight');
      await daemon.stop();
    });
}
