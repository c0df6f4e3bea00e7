import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `indexbot` imports (the example and fixture strategies) resolve to src/, as in a checkout's
// CLI: through Vite for what the tests import, through Node for TypeScript strategy files
// (loaded by tsx in the worker).
const PUBLIC = fileURLToPath(new URL('./src/public/', import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^indexbot$/, replacement: `${PUBLIC}index.ts` },
      { find: /^indexbot\/(client|backtest|sandbox|testing)$/, replacement: `${PUBLIC}$1.ts` },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    execArgv: ['--import', fileURLToPath(new URL('./scripts/register-source-imports.mjs', import.meta.url))],
    // End-to-end tests start real daemons, sandboxes and an npm install of the packed tarball on
    // two cores; what they claim about time (within two poll intervals, say) they assert
    // themselves, so the runner's limit is only a guard against a hang.
    testTimeout: 60_000,
    // Vitest's default on two cores is one worker, so the suite ran file after file while most
    // of its time is end-to-end tests waiting on polls and child processes: three share the
    // cores without starving each other.
    maxWorkers: 3,
    hookTimeout: 60_000,
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'] },
  },
});
