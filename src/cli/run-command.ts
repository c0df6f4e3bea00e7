import { type Command, InvalidArgumentError } from 'commander';
import { type ConfigFlags, loadConfig, permissionWarnings } from '../config/index.ts';
import { GROUP_NAME, GROUP_NAME_RULE } from '../stream/index.ts';
import { type RoleFlags, parseRole, startRole } from './roles.ts';
import { LOG_FLAGS, SERVER_FLAGS, loggerFor, untilSignal, withConfigFlags } from './options.ts';

export function registerRunCommand(program: Command): void {
  withConfigFlags(program.command('run').description('the daemon: poll, cache in SQLite, detect rebalances, run strategies until SIGINT/SIGTERM'), ...SERVER_FLAGS, ...LOG_FLAGS, 'strategies')
    .option('--watch', 'reload a strategy whose file changes, without a restart (cursor and state carry over)')
    .option('--http <addr>', 'serve /metrics, /healthz, /readyz, /api/v1 and the dashboard on host:port, e.g. 127.0.0.1:9464 (config: http.listen)')
    .option('--role <role>', 'all (one process), collector (poll, detect, publish events to Redis) or strategies (run strategies fed from Redis)', 'all')
    .option('--events <url>', 'redis:// (or redis-cluster://) URL of the event stream, for --role collector|strategies (or INDEXBOT_EVENTS_URL)')
    .option('--group <name>', "a runner's consumer group on the stream (default: from host and database)", groupOption)
    .action(async (flags: ConfigFlags & RoleFlags & { watch?: boolean }) => {
      // A runner talks to no server: it needs no base URL.
      // A bad --role is said first: the config it needs depends on it.
      parseRole(flags.role ?? 'all');
      const config = loadConfig(flags, process.env, { server: flags.role !== 'strategies' });
      const logger = loggerFor(config);
      for (const warning of permissionWarnings(config)) logger.warn({}, warning);
      // Listening before the start: a signal while it runs stops the bot once started, with its lock released, rather than killing it mid-start.
      const stopAsked = untilSignal();
      const stopping = new AbortController();
      const stopReason = new Error('stop asked while starting');
      void stopAsked.then(() => stopping.abort(stopReason));
      let daemon: Awaited<ReturnType<typeof startRole>>;
      try {
        daemon = await startRole(config, flags, { logger, watch: flags.watch === true, stopSignal: stopping.signal });
      } catch (e) {
        // Asked to stop while a start call waited on the server: it stopped there, having started nothing.
        if (e !== stopReason) throw e;
        logger.info({ signal: await stopAsked }, 'stopped while starting: nothing had started');
        return;
      }
      const ended = await Promise.race([stopAsked.then((signal) => ({ signal })), ...(daemon.failed ? [daemon.failed.then((error) => ({ error }))] : [])]);
      if ('error' in ended) {
        logger.error({ code: ended.error.code }, `stopping: ${ended.error.message}`);
        await daemon.stop();
        // The last catch says it on one line, and exits 78: a service manager does not restart it.
        throw ended.error;
      }
      logger.info(
        { signal: ended.signal },
        flags.role === 'strategies' ? 'stopping: no new reads of the event stream; finishing the events in hand' : 'stopping: no new polls; waiting for those in flight',
      );
      await daemon.stop();
    });
}

/** A consumer group name Redis and the stream consumer take; a bad one was an internal error (exit 70), which a service restarts forever. */
function groupOption(raw: string): string {
  if (!GROUP_NAME.test(raw)) throw new InvalidArgumentError(`expected ${GROUP_NAME_RULE}, got "${raw}"`);
  return raw;
}
