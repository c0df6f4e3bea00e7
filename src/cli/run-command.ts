import type { Command } from 'commander';
import { type ConfigFlags, loadConfig } from '../config/index.ts';
import { createLogger } from '../core/index.ts';
import { startDaemon } from './daemon.ts';
import { untilSignal } from './options.ts';

export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description('the daemon: poll, cache in SQLite, detect rebalances and log events until SIGINT/SIGTERM')
    .option('--config <file>', 'JSON config file (default config/indexbot.json, env INDEXBOT_CONFIG)')
    .option('--base-url <url>', 'API base URL ending in /v1 (env INDEXBOT_BASE_URL)')
    .option('--db <file>', 'SQLite file (default data/indexbot.db, env INDEXBOT_DB)')
    .option('--tier <name>', 'public, standard, basic, premium or enterprise (env INDEXBOT_TIER)')
    .option('--log-format <format>', 'json or pretty (env INDEXBOT_LOG_FORMAT)')
    .option('--strategies <dir>', 'where strategy modules are loaded from (default strategies/, env INDEXBOT_STRATEGIES)')
    .action(async (flags: ConfigFlags) => {
      const config = loadConfig(flags);
      const logger = createLogger({ level: config.logLevel, format: config.logFormat });
      const daemon = await startDaemon(config, { logger });
      const signal = await untilSignal();
      logger.info({ signal }, 'stopping: no new polls; waiting for those in flight');
      await daemon.stop();
    });
}
