import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon } from '../../src/cli/daemon.ts';
import { loadConfig } from '../../src/config/index.ts';
import { ConfigError } from '../../src/core/index.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { markPaused } from '../../src/strategy/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { lockIsFree, runCli, sandboxConfig, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { captureLogger } from '../helpers/fake-transport.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

let sb: Sandbox;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  sb = await testSandbox({ rateWindowMs: 10_000 });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await sb.close();
});

/**
 * Whether Node has booted in process `pid`: it catches SIGUSR1 (bit 9 of SigCgt in /proc) from
 * its bootstrap on, just before it runs the main script; loading the command's modules then
 * takes most of a second.
 */
function nodeBooted(pid: number): boolean {
  const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return mask !== undefined && (BigInt(`0x${mask}`) & (1n << 9n)) !== 0n;
}

/** `indexbot run` on `db` against the sandbox, stopped by `signal` once started: exit 0, and its output's lines. */
async function startThenStop(db: string, signal: NodeJS.Signals): Promise<string[]> {
  const daemon = spawnDaemon(['--config', sandboxConfig(sb, db, { indexes: ['sindex'] })], { INDEXBOT_API_KEY: sb.keys.premium });
  await waitFor('the start', () => daemon.output().includes('indexbot running'), 20_000, 20);
  daemon.child.kill(signal);
  expect(await daemon.exited, daemon.output()).toBe(0);
  return daemon.output().split('\n');
}

describe('startDaemon', () => {
  it('takes the HTTP port before anything else: a port in use is a config error naming http.listen, sent no request, left no loop running nor the lock held', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as AddressInfo).port;
    const db = tempDbPath();
    const file = sandboxConfig(sb, db, {
      indexes: ['sindex'],
      http: { listen: `127.0.0.1:${port}` },
      strategies: { dir: 'test/fixtures/strategies/counting' },
      alerts: { sinks: [{ type: 'webhook', name: 'hook', url: `${receiver.url}/hook` }] },
    });
    const config = loadConfig({ config: file }, { INDEXBOT_API_KEY: sb.keys.premium });
    const { logger, lines } = captureLogger();
    const requestsBefore = sb.counters().total;
    try {
      const refused = await startDaemon(config, { logger }).catch((e: unknown) => e);
      // The config file named it: exit 78 as for any of its values (it was a usage error, 64, which a service restarts).
      expect(refused).toBeInstanceOf(ConfigError);
      expect((refused as ConfigError).message).toBe(`${file}: http.listen 127.0.0.1:${port}: 127.0.0.1:${port} is already in use; pick another port, or 0 for any free one`);
    } finally {
      taken.close();
    }
    expect(sb.counters().total).toBe(requestsBefore);
    const atFailure = lines.length;
    // Long enough for either loop's next round (idle 1 s, retries sooner).
    await new Promise((r) => setTimeout(r, 1_500));
    expect(lines.slice(atFailure).filter((l) => l.includes('"component":"strategy"') || l.includes('"component":"alerts"'))).toEqual([]);
    expect(lockIsFree(db)).toBe(true);
  });

  it('says as it starts that the http settings of its file turn no HTTP face on, when none of them is http.listen', async () => {
    const db = tempDbPath();
    const file = sandboxConfig(sb, db, { indexes: ['sindex'], http: { token: 'env:HTTP_TOKEN' } });
    const { logger, lines } = captureLogger();
    const daemon = await startDaemon(loadConfig({ config: file }, { INDEXBOT_API_KEY: sb.keys.premium }), { logger, withoutStrategies: true });
    await daemon.stop();
    const warned = lines.findIndex((l) => l.includes('"level":"warn"') && l.includes('http.token set but not http.listen: no HTTP face'));
    expect(warned, lines.join('\n')).toBeGreaterThanOrEqual(0);
    expect(warned).toBeLessThan(lines.findIndex((l) => l.includes('indexbot running')));
  });

  it('indexbot run --http on a port in use: one line naming --http, exit 64, the lock released', { timeout: 30_000 }, async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as AddressInfo).port;
    const db = tempDbPath();
    const file = sandboxConfig(sb, db, { indexes: ['sindex'] });
    const requestsBefore = sb.counters().total;
    try {
      const r = await runCli(['run', '--config', file, '--http', `127.0.0.1:${port}`], { INDEXBOT_API_KEY: sb.keys.premium });
      expect(r.stderr.split('\n').filter((l) => l.startsWith('indexbot:'))).toEqual([
        `indexbot: --http 127.0.0.1:${port}: 127.0.0.1:${port} is already in use; pick another port, or 0 for any free one [USAGE_INVALID]`,
      ]);
      expect(r.status).toBe(64);
      expect(sb.counters().total).toBe(requestsBefore);
    } finally {
      taken.close();
    }
    expect(lockIsFree(db)).toBe(true);
  });

  it('indexbot run: a SIGTERM while it starts stops it once started: exit 0, the lock released', { timeout: 30_000 }, async () => {
    const db = tempDbPath();
    // The barrier strategy holds the start while it loads, until `go` is written: the signal lands mid-start.
    const barrier = dirname(db);
    const file = sandboxConfig(sb, db, { indexes: ['sindex'], strategies: { dir: 'test/fixtures/strategies/barrier' } });
    const daemon = spawnDaemon(['--config', file], { INDEXBOT_API_KEY: sb.keys.premium, INDEXBOT_TEST_BARRIER_DIR: barrier });
    await waitFor('the start to reach the barrier', () => readdirSync(barrier).some((f) => f.endsWith('.ready')), 20_000, 20);
    daemon.child.kill('SIGTERM');
    writeFileSync(join(barrier, 'go'), '');
    expect(await daemon.exited, daemon.output()).toBe(0);
    const output = daemon.output();
    // Once started; or, when the signal is taken in while the start asks the server for its indexes, there (trial 32).
    if (!output.includes('stopped while starting')) {
      expect(output.indexOf('indexbot running')).toBeGreaterThan(0);
      expect(output.indexOf('indexbot stopped')).toBeGreaterThan(output.indexOf('indexbot running'));
    }
    expect(lockIsFree(db)).toBe(true);
  });

  it('indexbot run: names at its start the strategies paused from before (trial 35: nothing said why one did not trade)', { timeout: 30_000 }, async () => {
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    markPaused(store, 'rebalance-alert', true);
    store.close();
    const warning = (await startThenStop(db, 'SIGTERM')).find((l) => l.includes('paused since before this start'));
    expect(JSON.parse(warning!)).toMatchObject({
      level: 40,
      strategies: ['rebalance-alert'],
      msg: 'paused since before this start: rebalance-alert; their events wait until `indexbot strategies resume`',
    });
  });

  it('indexbot run: says which cursors belong to no strategy or sink it runs, and how to forget them on its database (trial 32: they pinned retention for good, unsaid; trial 35: the command named no database)', {
    timeout: 30_000,
  }, async () => {
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    store.setCursor('strategy:gone', 0, 1);
    store.close();
    const warning = (await startThenStop(db, 'SIGTERM')).find((l) => l.includes('this run does not have'));
    expect(JSON.parse(warning!)).toMatchObject({ level: 40, consumers: ['strategy:gone'], msg: expect.stringContaining(`\`indexbot forget strategy:gone --db ${db}\``) });
  });

  it('indexbot run: a SIGTERM while its start waits on a server that does not answer ends the wait: exit 0 at once, not after the timeouts and retries (trial 32: 39 s)', {
    timeout: 30_000,
  }, async () => {
    const db = tempDbPath();
    // Takes each request and never answers it.
    let asked = 0;
    const silent = createServer(() => {
      asked += 1;
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const base = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`;
      const daemon = spawnDaemon(['--config', sandboxConfig({ baseUrl: base }, db, {})], { INDEXBOT_API_KEY: sb.keys.premium });
      await waitFor('the start to ask the server', () => asked > 0, 20_000, 20);
      const signalled = Date.now();
      daemon.child.kill('SIGTERM');
      expect(await daemon.exited, daemon.output()).toBe(0);
      expect(Date.now() - signalled).toBeLessThan(5_000);
      expect(daemon.output()).toContain('stopped while starting: nothing had started');
      expect(daemon.output()).not.toContain('indexbot running');
      expect(lockIsFree(db)).toBe(true);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('indexbot run: a SIGHUP stops it as SIGTERM does, said in its log (trial 32: it died at once, with no line)', { timeout: 30_000 }, async () => {
    const db = tempDbPath();
    const lines = await startThenStop(db, 'SIGHUP');
    expect(JSON.parse(lines.find((l) => l.includes('stopping: no new polls'))!)).toMatchObject({ signal: 'SIGHUP' });
    expect(lines.some((l) => l.includes('indexbot stopped'))).toBe(true);
    expect(lockIsFree(db)).toBe(true);
  });

  it('indexbot run: a SIGTERM before its code has loaded stops it once started too (found by trial 25: exit 143 and no line)', { timeout: 30_000 }, async () => {
    const db = tempDbPath();
    const daemon = spawnDaemon(['--config', sandboxConfig(sb, db, { indexes: ['sindex'] })], { INDEXBOT_API_KEY: sb.keys.premium });
    // Sent while its modules load: after Node's bootstrap (however loaded the machine), before
    // the command's action listens for it.
    await waitFor('Node to boot', () => nodeBooted(daemon.child.pid!), 20_000, 2);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(daemon.output()).not.toContain('indexbot running');
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited, daemon.output()).toBe(0);
    const output = daemon.output();
    expect(output.indexOf('indexbot stopped')).toBeGreaterThan(output.indexOf('indexbot running'));
    expect(output.indexOf('indexbot running')).toBeGreaterThan(0);
    expect(lockIsFree(db)).toBe(true);
  });
});
