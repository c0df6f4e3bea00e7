import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { mulberry32 as rng } from '../../src/core/index.ts';
import { readDb, sandboxConfig, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

let sb: Sandbox;
beforeAll(async () => {
  sb = await testSandbox({ speed: 60, startTime: Date.now(), rateWindowMs: 10_000 });
});
afterAll(() => sb.close());

const HANDLED = ['rebalance.announced', 'rebalance.completed', 'rebalance.cancelled', 'performance.updated'];

describe('strategies in the daemon', () => {
  it('a strategy counting events in its state sees each event exactly once across SIGKILL restarts', async () => {
    const db = tempDbPath();
    const config = sandboxConfig(sb, db, {
      indexes: ['sindex', 'mindex', 'dindex'],
      intervals: { rebalancing: 1, composition: 2, performance: 1, indexes: 30, tokens: 30 },
      strategies: { dir: 'test/fixtures/strategies/counting' },
    });
    const env = { INDEXBOT_API_KEY: sb.keys.premium };
    const random = rng(7);
    for (let round = 0; round < 4; round++) {
      const d = spawnDaemon(['--config', config], env);
      await waitFor('the daemon', () => /indexbot running/.test(d.output()), 20_000, 50);
      await new Promise((r) => setTimeout(r, 500 + Math.floor(random() * 2_000)));
      d.child.kill('SIGKILL');
      await d.exited;
    }
    const last = spawnDaemon(['--config', config], env);
    await waitFor('the daemon', () => /indexbot running/.test(last.output()), 20_000, 50);
    await new Promise((r) => setTimeout(r, 2_000));
    last.child.kill('SIGTERM');
    expect(await last.exited).toBe(0);

    const { events, cursor, seen, count } = readDb(db, (d) => {
      const cursorRow = d.prepare("SELECT seq FROM cursors WHERE consumer = 'strategy:counting'").get() as { seq: number };
      const state = Object.fromEntries(
        (d.prepare("SELECT key, value FROM strategy_state WHERE strategy = 'counting'").all() as { key: string; value: string }[]).map((r) => [r.key, JSON.parse(r.value)]),
      );
      const rows = d.prepare(`SELECT id FROM events WHERE seq <= ? AND type IN (${HANDLED.map(() => '?').join(',')}) ORDER BY seq`).all(cursorRow.seq, ...HANDLED) as { id: string }[];
      return { events: rows.map((r) => r.id), cursor: cursorRow.seq, seen: state.seen as string[], count: state.count as number };
    });
    expect(cursor).toBeGreaterThan(10);
    expect(seen).toEqual(events);
    expect(count).toBe(events.length);
  });

  it('npm start: the demo shows an announced and a completed rebalance and a paper fill, and stops cleanly', async () => {
    const db = tempDbPath('demo.db');
    const child = spawn(process.execPath, ['bin/indexbot.js', 'demo', '--duration-s', '50', '--speed', '2880', '--db', db], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, out).toBe(0);
    expect(out).toMatch(/event {2}rebalance\.announced/);
    expect(out).toMatch(/event {2}rebalance\.completed/);
    expect(out).toMatch(/alert {2}rebalance-alert: \w+ rebalance (announced|completed)/);
    expect(out).toMatch(/fill {3}[\w-]+: paper buy/);
    // What was bought reads as people know it (an index id, a token symbol), not as a ledger key.
    expect(out).not.toMatch(/paper (buy|sell) \S+ (token|index):/);
    expect(out).toContain('demo stopped');
  }, 90_000);

  it("the demo prints a strategy's alert as plain text, without its terminal escapes (trial 28)", async () => {
    // Stopped by Ctrl-C once the alert is out, not after a fixed few seconds: on a loaded CI
    // machine the first performance poll came after 8 s, and the alert never did.
    const child = spawn(process.execPath, ['bin/indexbot.js', 'demo', '--duration-s', '50', '--db', tempDbPath('demo.db'), '--strategies', 'test/fixtures/escapes'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const onOutput = (d: Buffer) => {
      out += d.toString();
      // Once: a second Ctrl-C ends the process the way Node would, not cleanly.
      if (!child.killed && /alert {2}escape-alerter/.test(out)) child.kill('SIGINT');
    };
    child.stdout.on('data', onOutput);
    child.stderr.on('data', onOutput);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, out).toBe(0);
    expect(out).toMatch(/alert {2}escape-alerter: \w+ RED {2}seen/);
    expect(out).not.toContain('\u001b');
    expect(out).not.toContain('\u0007');
  }, 60_000);
});
