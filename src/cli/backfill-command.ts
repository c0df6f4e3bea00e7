import type { Command } from 'commander';
import { SingleBar } from 'cli-progress';
import { type ConfigFlags, loadConfig } from '../config/index.ts';
import { HISTORY_INTERVALS, type HistoryInterval } from '../contract/index.ts';
import { IndexbotError } from '../core/index.ts';
import { type BackfillProgress, backfill, describeRange } from '../poller/index.ts';
import { SnapshotStore, claimFromDemo } from '../store/index.ts';
import { createClient, resolveIndexes, withStoredSignIn } from './daemon.ts';
import { openSharedBudgets } from './redis.ts';
import { LOG_FLAGS, SERVER_FLAGS, checkRange, dateOption, intervalOption, listOption, loggerFor, onStopSignal, withConfigFlags } from './options.ts';

interface BackfillFlags extends ConfigFlags {
  from: number;
  to?: number;
  indexes?: string[];
  interval: HistoryInterval;
}

export function registerBackfillCommand(program: Command): void {
  withConfigFlags(
    program
      .command('backfill')
      .description('pull history and rebalancing records into the cache for a date range, within the rate budget; resumes where it stopped')
      .requiredOption('--from <date>', 'start, e.g. 2025-01-01 (UTC)', dateOption)
      .option('--to <date>', 'end (default now)', dateOption)
      .option('--indexes <ids>', 'comma-separated index ids (default the configured ones)', listOption)
      .option('--interval <interval>', `history interval: ${HISTORY_INTERVALS.join(' or ')}`, intervalOption, '1h'),
    ...SERVER_FLAGS,
    ...LOG_FLAGS,
  ).action(async (flags: BackfillFlags) => {
    const now = Date.now();
    checkRange({ flag: '--from', at: flags.from }, flags.to === undefined || flags.to > now ? { flag: 'now', at: now } : { flag: '--to', at: flags.to });
    const config = loadConfig(flags);
    const logger = loggerFor(config);
    const store = SnapshotStore.open(config.db);
    claimFromDemo(store);
    const abort = new AbortController();
    // Pages stored so far (a rebalancing list cut short is fetched again whole, so not all are "kept").
    let pagesKept = 0;
    const stopListening = onStopSignal(() =>
      abort.abort(
        new IndexbotError(`backfill interrupted: ${pagesKept} page(s) stored in ${config.db}; run the same command again to resume (what is held is not fetched again)`, 'INTERRUPTED', 'temporary'),
      ),
    );
    const bar = process.stderr.isTTY ? new SingleBar({ format: 'backfill {index} [{bar}] {value}/{total} pages | {requests} requests | ETA {eta_formatted}', stream: process.stderr }) : undefined;
    let lastLine = 0;
    let lastLineAt = Date.now();
    // Off a terminal, a line every 5 s even while no page comes: its requests are low priority, and
    // on a key daemons share it waits for what they leave of the budget (trial 29: 2 minutes silent).
    const waiting = bar
      ? undefined
      : setInterval(() => {
          const quietMs = Date.now() - lastLineAt;
          if (quietMs < 5_000) return;
          logger.info(
            { pages: pagesKept, quietS: Math.round(quietMs / 1000) },
            `backfill waiting: no page in the last ${Math.round(quietMs / 1000)} s (${pagesKept} stored); its requests go after the polls of any process on this key`,
          );
          lastLineAt = Date.now();
        }, 1_000).unref();
    const onProgress = (p: BackfillProgress) => {
      pagesKept = p.pagesDone;
      lastLineAt = Date.now();
      if (bar) {
        if (p.pagesDone === 1) bar.start(p.pagesTotal, 0, { index: p.indexId, requests: 0 });
        bar.setTotal(p.pagesTotal);
        bar.update(p.pagesDone, { index: p.indexId, requests: p.requests });
        return;
      }
      // Off a terminal: a line every 5 s and at the end, not one per page.
      if (p.elapsedMs - lastLine < 5_000 && p.pagesDone < p.pagesTotal) return;
      lastLine = p.elapsedMs;
      logger.info(
        { index: p.indexId, pages: p.pagesDone, of: p.pagesTotal, requests: p.requests, etaS: p.etaMs === undefined ? null : Math.round(p.etaMs / 1000) },
        `backfill ${p.pagesDone}/${p.pagesTotal} pages`,
      );
    };
    const shared = await openSharedBudgets(config, logger);
    try {
      const client = createClient(withStoredSignIn(config, store), store, logger, undefined, shared);
      const indexes = await (flags.indexes ? resolveIndexes(client, flags.indexes, '--indexes') : resolveIndexes(client, config.indexes));
      const report = await backfill({ client, store, indexes, from: flags.from, to: flags.to ?? now, interval: flags.interval, logger, signal: abort.signal, onProgress });
      bar?.stop();
      const out = process.stdout;
      out.write(`backfilled ${describeRange(report)} (${report.interval}) in ${(report.elapsedMs / 1000).toFixed(1)} s, ${report.requests} requests\n`);
      for (const i of report.indexes) {
        // Of the range asked, not the whole cache (trial 37 read it as the cache's; `status` shows that).
        const held = i.firstPoint === undefined ? 'no points held in this range' : `holds ${describeRange({ from: i.firstPoint, to: i.lastPoint! })} of this range`;
        const fetched = i.fetched.length === 0 ? 'already cached' : `+${i.points} points, +${i.rebalances} rebalancing records`;
        out.write(`  ${i.indexId.padEnd(12)} ${fetched}; ${held}; ${i.gaps.length === 0 ? 'no gaps' : `${i.gaps.length} gap(s): ${i.gaps.map(describeRange).join(', ')}`}\n`);
      }
    } catch (e) {
      // A temporary failure ends it as Ctrl-C does: what it kept, and that the same command resumes (trial 34: a malformed page said neither). The same error, its class, code and cause kept.
      if (e instanceof IndexbotError && e.kind === 'temporary' && e.code !== 'INTERRUPTED') {
        e.message = `${e.message}; backfill stopped: ${pagesKept} page(s) stored in ${config.db}; run the same command again to resume (what is held is not fetched again)`;
      }
      throw e;
    } finally {
      clearInterval(waiting);
      bar?.stop();
      stopListening();
      await shared?.close();
      store.close();
    }
  });
}
