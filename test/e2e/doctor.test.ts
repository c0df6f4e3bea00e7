import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, demoKey } from '../../src/sandbox/index.ts';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SnapshotStore } from '../../src/store/index.ts';
import { runCli, sandboxConfig } from '../helpers/daemon.ts';

async function doctor(args: string[], env: Record<string, string>) {
  const r = await runCli(['doctor', ...args], env);
  return { code: r.status, out: r.stdout + r.stderr };
}
import { startReceiver } from '../helpers/receiver.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

describe('indexbot doctor against the sandbox', () => {
  let sandbox: Sandbox;
  const healthy = demoKey('premium');
  const noIndex = demoKey('premium', { name: 'no-index', permissions: ['read:portfolio'] });
  const basic = demoKey('basic');

  beforeAll(async () => {
    sandbox = await testSandbox({ apiKeys: [healthy, noIndex, basic] });
  });
  afterAll(async () => sandbox.close());

  it('makes nothing at a path with no database: it warns, naming the path, and checks the server all the same (found by trials 20 and 22)', async () => {
    const dir = join(dirname(tempDbPath()), 'typo');
    const config = sandboxConfig(sandbox, tempDbPath(), {});
    const r = await doctor(['--config', config, '--db', join(dir, 'nothing.db')], { INDEXBOT_API_KEY: healthy.key });
    expect(r.out).toContain(
      `WARN  database         no database at ${join(dir, 'nothing.db')} yet (doctor made none): the first \`indexbot run\` makes it and its folders (${dirname(dir)} is writable); check the path if you expected one`,
    );
    expect(r.out).toContain('PASS  credentials      API key accepted');
    expect(existsSync(dir)).toBe(false);
    expect(r.code).toBe(0);
  });

  it('checks the server with an API key however the database fails: a key keeps no tokens (trial 35: "not checked" beside a read-only directory)', async () => {
    const db = tempDbPath();
    writeFileSync(db, 'not a database');
    const config = sandboxConfig(sandbox, db, {});
    const r = await doctor(['--config', config], { INDEXBOT_API_KEY: healthy.key });
    expect(r.out).toMatch(/FAIL {2}database +.*is not a database file/);
    expect(r.out).toContain('PASS  credentials      API key accepted');
    expect(r.out).not.toContain('the database is needed to keep tokens');
  });

  it('passes a healthy setup, and sends a test message to a sink', async () => {
    const receiver = await startReceiver();
    try {
      const db = tempDbPath();
      SnapshotStore.open(db).close();
      const config = sandboxConfig(sandbox, db, { strategies: { dir: 'strategies' }, alerts: { sinks: [{ type: 'slack', url: `${receiver.url}/services/x` }, { type: 'console' }] } });
      const r = await doctor(['--config', config, '--send-test'], { INDEXBOT_API_KEY: healthy.key });
      expect(r.out).toContain(`PASS  database         ${db}: writable, schema`);
      expect(r.out).toMatch(/(PASS|WARN) {2}disk +\d+\.\d\d GiB free beside the database \(file \d+\.\d\d GiB; snapshots kept 30 days\)/);
      expect(r.out).toContain('PASS  credentials      API key accepted');
      expect(r.out).toContain('PASS  permissions      read:index granted');
      expect(r.out).toMatch(/PASS {2}rate limits +the server's X-RateLimit-Limit agrees with tier premium/);
      expect(r.out).toMatch(/PASS {2}strategies +drift-reversion, rebalance-alert, rebalance-front-run load/);
      expect(r.out).toContain('PASS  sink slack       slack: test message accepted');
      // The console sink's test shows, as its alerts do (a trial saw PASS and no message).
      expect(r.out).toMatch(/PASS {2}sink console +console: test message accepted/);
      expect(r.out).toContain('[alert] indexbot doctor: test message; alerts reach this channel');
      expect(r.out).toContain('all checks passed');
      expect(r.code).toBe(0);
      expect(JSON.parse(receiver.requests[0]!.body).text).toContain('indexbot doctor: test message');
    } finally {
      await receiver.close();
    }
  });

  it('warns of an alert filter naming a strategy not run or an index not followed: that sink would never fire (trial 28)', async () => {
    const db = tempDbPath();
    SnapshotStore.open(db).close();
    const config = sandboxConfig(sandbox, db, {
      indexes: ['sindex'],
      strategies: { dir: 'strategies' },
      alerts: { sinks: [{ type: 'console', name: 'ops', filter: { strategyAlerts: ['rebalance-alert', 'nosuchstrategy'], indexes: ['sindex', 'zzindex'] } }] },
    });
    const r = await doctor(['--config', config], { INDEXBOT_API_KEY: healthy.key });
    const line = r.out.split('\n').find((l) => l.includes('alert filters'));
    expect(line).toMatch(
      /^WARN {2}alert filters +alert sink "ops": filter\.strategyAlerts "nosuchstrategy" is no strategy this bot runs \(drift-reversion, rebalance-alert, rebalance-front-run\); alert sink "ops": filter\.indexes "zzindex" is no index this bot follows \(sindex\)$/,
    );
    expect(r.code).toBe(0);
  });

  it('fails on a wrong key, naming it, and never prints the key', async () => {
    const wrong = 'sk_sandbox_premium_wrongwrongwrongwrong1';
    const r = await doctor(['--config', sandboxConfig(sandbox, tempDbPath(), {})], { INDEXBOT_API_KEY: wrong });
    expect(r.out).toMatch(/FAIL {2}credentials +GET \/indexes: HTTP 401/);
    expect(r.out).not.toContain(wrong);
    expect(r.code).toBe(1);
  });

  it('fails on a key lacking a permission polling needs', async () => {
    const r = await doctor(['--config', sandboxConfig(sandbox, tempDbPath(), {})], { INDEXBOT_API_KEY: noIndex.key });
    expect(r.out).toMatch(/FAIL {2}permissions +the API key lacks read:index, which polling needs/);
    expect(r.code).toBe(1);
  });

  it('fails when the configured tier promises more than the server allows', async () => {
    // A basic key (this test once took the sandbox's, which it did not hold: no key at all).
    const r = await doctor(['--config', sandboxConfig(sandbox, tempDbPath(), {})], { INDEXBOT_API_KEY: basic.key });
    expect(r.out).toMatch(/PASS {2}credentials +API key accepted/);
    expect(r.out).toMatch(/FAIL {2}rate limits +the server allows \d+ requests per window, the config says tier premium/);
    expect(r.code).toBe(1);
    // With no key there is no key to blame: it said "set the tier the key really has" beside "credentials none".
    const keyless = await doctor(['--config', sandboxConfig(sandbox, tempDbPath(), {})], { INDEXBOT_API_KEY: '' });
    expect(keyless.out).toMatch(/PASS {2}credentials +none /);
    expect(keyless.out).toMatch(
      /FAIL {2}rate limits +with no credential the server allows the public tier's 60 requests per window, the config says tier premium \(1000\): set INDEXBOT_API_KEY to a key of that tier, or "tier": "public"/,
    );
    expect(keyless.code).toBe(1);
  });

  it('warns when the key allows more than the configured tier: paced to the tier, the bot uses a fraction of it (found by trial 25: it said "agrees")', async () => {
    const r = await doctor(['--config', sandboxConfig(sandbox, tempDbPath(), { tier: 'basic' })], { INDEXBOT_API_KEY: healthy.key });
    expect(r.out).toMatch(/WARN {2}rate limits +the server allows 1000 requests per window, more than tier basic \(300\) the config says: set "tier": "premium" to use them/);
    expect(r.out).not.toContain('agrees');
    expect(r.code).toBe(0);
  });

  it('reports a keypair file that does not exist among its checks, naming the file (found by trial 25: one line and exit 78, the path redacted)', async () => {
    const missing = join(dirname(tempDbPath()), 'nokey.json');
    const r = await doctor(['--config', sandboxConfig(sandbox, tempDbPath(), { tier: 'standard' })], { INDEXBOT_API_KEY: '', INDEXBOT_WALLET_KEYPAIR: missing });
    expect(r.out).toContain(`FAIL  credentials      keypair file ${missing} does not exist [WALLET_KEYPAIR_INVALID]`);
    expect(r.out).toMatch(/WARN {2}database +no database at /);
    expect(r.out).toMatch(/(PASS|WARN) {2}strategies /);
    expect(r.code).toBe(1);
  });

  it('fails a database path where nothing can be made, as /proc (found by trial 25: "/proc is writable")', async () => {
    const r = await doctor(['--config', sandboxConfig(sandbox, tempDbPath(), {}), '--db', '/proc/indexbot-doctor.db'], { INDEXBOT_API_KEY: healthy.key });
    expect(r.out).toMatch(/FAIL {2}database +no database at \/proc\/indexbot-doctor\.db, and nothing can be made in \/proc \([^)]+\): `indexbot run` could not make one there \[STORE_UNAVAILABLE\]/);
    expect(r.code).toBe(1);
  });
});
