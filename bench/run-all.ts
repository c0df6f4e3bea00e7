/**
 * `npm run bench`: every benchmark in turn, each in its own process so that one's memory
 * (the backtest's peak RSS, the soak's heap) is not another's.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BENCHES = [
  'rate-gate',
  'shared-gate',
  'sandbox',
  'ingest',
  'cache-queries',
  'retention-year',
  'alert-latency',
  'dispatch',
  'runner-ingest',
  'soak',
  'fault-run',
  'backtest',
  'http',
  'cli-startup',
];

let failed = 0;
for (const name of BENCHES) {
  const file = fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
  // tsx, and `indexbot` imports (the example strategies') resolved to src/, as in the checkout's CLI.
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', fileURLToPath(new URL('../scripts/register-source-imports.mjs', import.meta.url)), file], { stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    console.error(`${name}: exited with ${r.status ?? r.signal}`);
  }
}
process.exitCode = failed > 0 ? 1 : 0;
