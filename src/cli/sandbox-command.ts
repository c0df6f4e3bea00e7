import type { Command } from 'commander';
import { startSandbox } from '../sandbox/index.ts';
import { intOption, numberOption, untilSignal } from './options.ts';

export function registerSandboxCommand(program: Command): void {
  program
    .command('sandbox')
    .description('run the sandbox server: the API contract over a simulated market, no account needed')
    .option('--port <port>', 'port to listen on (0: any free port)', intOption(0, 65535), 7420)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--seed <n>', 'seed of the simulated market', intOption(0), 1)
    .option('--speed <x>', 'simulated seconds per real second', numberOption(0), 1)
    .option('--control', 'serve the /_sandbox control routes', false)
    .option('--rate-window-ms <ms>', 'length of the rate-limit minute', intOption(1), 60_000)
    .action(async (opts: { port: number; host: string; seed: number; speed: number; control: boolean; rateWindowMs: number }) => {
      const sandbox = await startSandbox(opts);
      const out = process.stdout;
      out.write(`indexbot sandbox listening\n  base URL: ${sandbox.baseUrl}\n  seed ${opts.seed}, speed x${opts.speed}, rate window ${opts.rateWindowMs} ms\n`);
      out.write('  demo API keys (local sandbox only):\n');
      for (const [tier, key] of Object.entries(sandbox.keys)) out.write(`    ${tier.padEnd(10)} ${key}\n`);
      if (opts.control) out.write(`  control routes: ${sandbox.origin}/_sandbox/{counters,clock,rebalance,rebalance/cancel,expire-token,revoke-key,faults}\n`);
      out.write('Ctrl-C to stop.\n');
      const signal = await untilSignal();
      await sandbox.close();
      out.write(`sandbox stopped (${signal})\n`);
    });
}
