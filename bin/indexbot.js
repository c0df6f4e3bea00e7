#!/usr/bin/env node
// An installed package runs its compiled dist/ on plain Node. A checkout (src/ and scripts/
// beside bin/, which the tarball does not ship) runs the TypeScript source through tsx, and
// `indexbot` imports resolve to src/ too (scripts/source-imports.mjs): no build step while
// developing.
import { existsSync } from 'node:fs';

// The commands that wait for a stop signal install their handler once their code has loaded
// (half a second from source); one sent before then killed the process with 143 and no line
// (trial 25). It is kept for them (src/cli/options.ts, onStopSignal), and they stop as soon as
// they have started; a second one ends the process at once, as it would after.
if (['run', 'demo', 'sandbox'].includes(process.argv[2] ?? '')) {
  const early = (signal) => {
    if (process[Symbol.for('indexbot.earlyStop')]) process.exit({ SIGHUP: 129, SIGINT: 130 }[signal] ?? 143);
    process[Symbol.for('indexbot.earlyStop')] = signal;
  };
  process[Symbol.for('indexbot.earlyStopHandler')] = early;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, early);
}

const source = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(source)) {
  await import('../scripts/register-source-imports.mjs');
  await import(source.href);
} else {
  await import('../dist/cli/main.js');
}
