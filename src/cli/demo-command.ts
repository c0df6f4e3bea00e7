import type { Command } from 'commander';
import { describeChanges } from '../alerts/index.ts';
import { IndexClient } from '../api/index.ts';
import type { Rebalance } from '../contract/index.ts';
import { IndexbotError } from '../core/index.ts';
import { startSandbox } from '../sandbox/index.ts';
import { intOption, numberOption, untilSignal } from './options.ts';

interface DemoOptions {
  speed: number;
  seed: number;
  pollMs: number;
  durationS: number | undefined;
}

/**
 * The first-run experience: a sandbox on a free loopback port with a fast clock, and the
 * typed client following every index's rebalancing feed, one readable line per change.
 */
export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('run the sandbox in-process with a fast clock and follow its rebalances (what `npm start` runs)')
    .option('--speed <x>', 'simulated seconds per real second', numberOption(1), 1440)
    .option('--seed <n>', 'seed of the simulated market', intOption(0), 1)
    .option('--poll-ms <ms>', 'how often each rebalancing feed is polled', intOption(200), 2000)
    .option('--duration-s <s>', 'stop by itself after this many seconds', intOption(1))
    .action(async (opts: DemoOptions) => {
      const sandbox = await startSandbox({ port: 0, speed: opts.speed, seed: opts.seed });
      const client = new IndexClient({ baseUrl: sandbox.baseUrl, apiKey: sandbox.keys.premium, tier: 'premium' });
      const out = (line: string) => process.stdout.write(`${line}\n`);
      const simTime = () => new Date(sandbox.clock.now()).toISOString().slice(0, 16).replace('T', ' ');
      out(`indexbot demo: sandbox at ${sandbox.baseUrl}, simulated clock x${opts.speed} (a simulated day every ${(86400 / opts.speed).toFixed(0)} s)`);

      const indexes = await client.iterateIndexes().toArray();
      for (const idx of indexes) {
        out(`  ${idx.id.padEnd(7)} ${idx.name.padEnd(30)} ${String(idx.rebalance_frequency).padEnd(9)} value ${idx.current_price.toFixed(2)}`);
      }
      out('Following rebalancing feeds (Ctrl-C to stop)...');

      const seen = new Map<string, string>();
      const report = (r: Rebalance, baseline: boolean) => {
        const before = seen.get(r.id);
        seen.set(r.id, r.status);
        if (baseline || before === r.status) return;
        const when = r.status === 'announced' ? `effective ${r.effective_at.slice(0, 16).replace('T', ' ')}` : '';
        out(`[sim ${simTime()}] ${r.index_id} rebalance ${r.status} ${r.id} ${when}`);
        if (r.status !== 'cancelled') out(`    ${describeChanges(r.changes)}`);
      };
      const poll = async (baseline: boolean) => {
        await Promise.all(
          indexes.map(async (idx) => {
            const page = await client.listRebalancing(idx.id, {}, { limit: 5 });
            for (const r of [...page.items].reverse()) report(r, baseline);
          }),
        );
      };

      await poll(true);
      const stop = new AbortController();
      const deadline = opts.durationS ? setTimeout(() => stop.abort(), opts.durationS * 1000) : undefined;
      void untilSignal().then(() => stop.abort());
      while (!stop.signal.aborted) {
        await new Promise((resolve) => setTimeout(resolve, opts.pollMs));
        if (stop.signal.aborted) break;
        try {
          await poll(false);
        } catch (e) {
          if (!(e instanceof IndexbotError)) throw e;
          out(`poll failed: ${e.message}`);
        }
      }
      clearTimeout(deadline);
      await sandbox.close();
      out('demo stopped');
    });
}
