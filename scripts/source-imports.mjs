// In a checkout only (the tarball ships neither this file nor src/): `indexbot` and
// `indexbot/<entry>` imports, a strategy's included, resolve to the TypeScript source in
// src/public/, so nothing needs building while developing. The published package.json
// points its exports at dist/ alone. Registered by bin/indexbot.js, a sweep's worker
// threads, the test runner and the benches (`--import ./scripts/register-source-imports.mjs`).
const PUBLIC = new URL('../src/public/', import.meta.url);
const ENTRY = /^indexbot(?:\/(client|backtest|sandbox|testing))?$/;

export async function resolve(specifier, context, next) {
  const entry = ENTRY.exec(specifier);
  if (!entry) return next(specifier, context);
  return { url: new URL(`${entry[1] ?? 'index'}.ts`, PUBLIC).href, shortCircuit: true };
}
