import { describe, expect, it } from 'vitest';
import { buildCache } from '../helpers/backtest-cache.ts';
import { runCli, writeConfig } from '../helpers/daemon.ts';

describe('research commands', () => {
  const db = buildCache();
  const env = { INDEXBOT_CONFIG: writeConfig(db, { db, strategies: { paper: { feeBps: 0, slippageBps: 0 } } }) };

  it('check-lookahead: FAIL with a table and exit 1 for a peeking strategy; PASS and exit 0 for an example', async () => {
    const peek = await runCli(['check-lookahead', '--strategy', 'test/fixtures/research/file-peeker.ts'], env);
    expect(peek.stderr).toBe('');
    expect(peek.status).toBe(1);
    const lines = peek.stdout.trim().split('\n');
    expect(lines[0]).toBe('check-lookahead file-peeker 2025-03-01 00:00 .. 2025-03-05 23:00: 1 decisions at 1 times; replayed on the cache cut at 1 of them');
    expect(lines[1]).toMatch(/^FAIL 2 decision\(s\) differ/);
    expect(lines[3]).toMatch(/^2025-03-02 06:00 +2025-03-02 06:00 +rebalance\.announced:x:rb_x_1 +buy +index:x +filled +[\d.]+ +cut only$/);
    const clean = await runCli(['check-lookahead', '--strategy', 'rebalance-front-run', '--json'], env);
    expect(clean.status).toBe(0);
    const r = JSON.parse(clean.stdout);
    expect(r).toMatchObject({ strategy: 'rebalance-front-run', differences: [], clockCalls: [], globals: [] });
    expect(r.checked).toBeGreaterThan(0);
  }, 120_000);
});
