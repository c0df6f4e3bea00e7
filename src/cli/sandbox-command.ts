import type { Command } from 'commander';
import { BOUNDS, isLoopback } from '../config/index.ts';
import { listenFailure } from '../core/index.ts';
import { MAX_SPEED, startSandbox } from '../sandbox/index.ts';
import { intOption, numberOption, portOption, seedOption, untilSignal } from './options.ts';

export function registerSandboxCommand(program: Command): void {
  program
    .command('sandbox')
    .description('run the sandbox server: the API contract over a simulated market, no account needed')
    .option('--port <port>', 'port to listen on (0: any free port)', portOption, 7420)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--seed <n>', 'seed of the simulated market', seedOption, 1)
    .option('--speed <x>', `simulated seconds per real second, up to ${MAX_SPEED}`, numberOption(0, MAX_SPEED), 1)
    .option('--control', 'serve the /_sandbox control routes', false)
    .option('--rate-window-ms <ms>', 'length of the rate-limit minute', intOption(BOUNDS.rateWindowMs.min, BOUNDS.rateWindowMs.max), 60_000)
    .action(async (opts: { port: number; host: string; seed: number; speed: number; control: boolean; rateWindowMs: number }) => {
      const sandbox = await startSandbox(opts).catch((e: unknown) => {
        throw listenFailure(e, opts.host, opts.port, { port: `--port ${opts.port}`, host: `--host ${opts.host}` });
      });
      // Listening before "Ctrl-C to stop" is printed: a signal sent on seeing it found no handler and killed the process.
      const stopAsked = untilSignal();
      if (!isLoopback(opts.host)) {
        const control = opts.control ? ', and its control routes (its clock, keys and faults),' : '';
        process.stderr.write(
          `indexbot: warning: --host ${opts.host} serves the sandbox beyond this machine: whoever reaches it can use the demo keys below${control} with no other check; it is a test server\n`,
        );
      }
      const out = process.stdout;
      out.write(`indexbot sandbox listening\n  base URL: ${sandbox.baseUrl}\n  seed ${opts.seed}, speed x${opts.speed}, rate window ${opts.rateWindowMs} ms\n`);
      out.write('  demo API keys (local sandbox only):\n');
      for (const [tier, key] of Object.entries(sandbox.keys)) out.write(`    ${tier.padEnd(10)} ${key}\n`);
      if (opts.control) out.write(`  control routes: ${sandbox.origin}/_sandbox/{counters,clock,rebalance,rebalance/cancel,expire-token,revoke-key,faults}\n`);
      out.write('Ctrl-C to stop.\n');
      const signal = await stopAsked;
      await sandbox.close();
      out.write(`sandbox stopped (${signal})\n`);
    });
}
