import { chmodSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import bs58 from 'bs58';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WalletKeypair } from '../../src/auth/index.ts';
import { type Sandbox, demoKey } from '../../src/sandbox/index.ts';
import { readDb, runCli, sandboxConfig, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { control, testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

/**
 * Whole runs of the real daemon at debug level, made to hit every path that handles a
 * credential: 500s (retried), 401s (a revoked key; expired access tokens, refreshed),
 * failing alert sinks, `doctor --send-test`, `login` and `status`. Everything they print is
 * then searched for each secret they held.
 */
const API_KEY = 'sk_sandbox_premium_CANARYkey7f3a9c2e1b0d8';
const HOOK_SECRET = 'whsec_CANARYsecret_5e2b7c1a9d';
const SLACK_PATH = '/services/T0CANARY/B0CANARY/CANARYslackpath3c8e';
const BOT_TOKEN = '1234567:CANARYbotToken_AAF9x2kQ7';

let sb: Sandbox;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  sb = await testSandbox({ speed: 1, startTime: Date.now(), rateWindowMs: 10_000, apiKeys: [demoKey('premium', { key: API_KEY, name: 'canary' })] });
  // Every sink fails its first two deliveries, so each failure path is logged.
  const calls = new Map<string, number>();
  receiver = await startReceiver((r) => {
    const sink = r.path.split('/')[1]!;
    calls.set(sink, (calls.get(sink) ?? 0) + 1);
    return calls.get(sink)! <= 2 ? { status: 500 } : { status: 200 };
  });
});
afterAll(async () => {
  await receiver.close();
  await sb.close();
});

function config(db: string, extra: Record<string, unknown> = {}) {
  return sandboxConfig(sb, db, {
    indexes: ['sindex'],
    intervals: { rebalancing: 1, composition: 1, performance: 5, indexes: 30, tokens: 30 },
    shutdownGraceMs: 3_000,
    strategies: { dir: 'strategies' },
    alerts: {
      sinks: [
        { type: 'webhook', url: `${receiver.url}/hook`, secret: 'env:HOOK_SECRET' },
        { type: 'slack', url: 'env:SLACK_URL' },
        { type: 'telegram', botToken: 'env:BOT_TOKEN', chatId: 42, baseUrl: `${receiver.url}/tg` },
      ],
    },
    ...extra,
  });
}

const env = () => ({ HOOK_SECRET, SLACK_URL: `${receiver.url}/slack${SLACK_PATH}`, BOT_TOKEN, INDEXBOT_LOG_LEVEL: 'debug' });

const delivered = (db: string) => readDb(db, (d) => (d.prepare("SELECT COUNT(*) AS n FROM alert_outbox WHERE status = 'delivered'").get() as { n: number }).n);

/** The statuses of the daemon's `request` log lines. */
function requestStatuses(output: string): Set<number | null> {
  const statuses = new Set<number | null>();
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    const l = JSON.parse(line) as { msg?: string; status?: number | null };
    if (l.msg === 'request') statuses.add(l.status ?? null);
  }
  return statuses;
}

function expectNoSecret(output: string, secrets: string[]) {
  for (const s of secrets) expect(output.includes(s), `a secret of ${s.length} chars appears in the output`).toBe(false);
  expect(output).not.toMatch(/eyJ[\w-]{8,}\.eyJ[\w-]{8,}/);
  expect(output).not.toMatch(/Bearer (?!\[REDACTED\])\S/);
}

describe('secrets in a full run', () => {
  it('an API key run with 500s, a revoked key and failing sinks prints no key, secret, URL or bot token', async () => {
    const db = tempDbPath();
    const cfg = config(db);
    const daemon = spawnDaemon(['--config', cfg], { ...env(), INDEXBOT_API_KEY: API_KEY });
    let doctorOut = '';
    try {
      await waitFor('first polls', () => readDb(db, (d) => (d.prepare('SELECT COUNT(*) AS n FROM poll_jobs WHERE last_success_at IS NOT NULL').get() as { n: number }).n >= 3));
      await control(sb, '/faults', { kind: 'status', status: 500, count: 4 });
      await control(sb, '/faults', { kind: 'html', count: 2 });
      await control(sb, '/rebalance', { index_id: 'sindex', effective_in_seconds: 8 });
      await waitFor('announcement and completion delivered to every sink', () => delivered(db) >= 6, 30_000);
      const d = await runCli(['doctor', '--config', cfg, '--send-test'], { ...env(), INDEXBOT_API_KEY: API_KEY });
      doctorOut = d.stdout + d.stderr;
      expect(doctorOut).toContain('all checks passed');
      await control(sb, '/revoke-key', { key: API_KEY });
      await waitFor('a refused poll', () => daemon.output().includes('API_UNAUTHORIZED'));
      const after = await runCli(['doctor', '--config', cfg], { ...env(), INDEXBOT_API_KEY: API_KEY });
      doctorOut += after.stdout + after.stderr;
      expect(after.status).toBe(1);
    } finally {
      // The revoked key stops the daemon by itself (exit 78); before that, a stop ends it.
      const stopped = await Promise.race([daemon.exited, new Promise<'running'>((r) => setTimeout(() => r('running'), 20_000))]);
      if (stopped === 'running') daemon.child.kill('SIGTERM');
    }
    expect(await daemon.exited).toBe(78);
    expect(daemon.output()).toMatch(/^indexbot: the server has refused the credential on every poll since .* \[API_UNAUTHORIZED\]$/m);
    const status = await runCli(['status', '--db', db]);
    const out = daemon.output();
    // The run did go through the paths under test.
    expect([...requestStatuses(out)]).toEqual(expect.arrayContaining([200, 500, 502, 401]));
    expect(out).toContain('alert delivery failed; will retry');
    expect(receiver.requests.some((r) => typeof r.headers['x-indexbot-signature'] === 'string')).toBe(true);
    expect(receiver.requests.some((r) => r.path.includes(BOT_TOKEN))).toBe(true);
    expectNoSecret(out + doctorOut + status.stdout + status.stderr, [API_KEY, HOOK_SECRET, SLACK_PATH, BOT_TOKEN, BOT_TOKEN.split(':')[1]!]);
  }, 90_000);

  it('a wallet run with expired tokens refreshed and 500s prints no access token, refresh token or wallet key', async () => {
    const db = tempDbPath();
    const keypair = WalletKeypair.generate();
    const keyFile = join(dirname(db), 'id.json');
    writeFileSync(keyFile, keypair.toFileJson());
    chmodSync(keyFile, 0o600);
    const secretKey = JSON.parse(keypair.toFileJson()) as number[];
    const walletSecrets = [bs58.encode(Uint8Array.from(secretKey)), JSON.stringify(secretKey), secretKey.join(',')];

    const tokens = new Set<string>();
    const collect = () =>
      readDb(db, (d) => {
        const row = d.prepare('SELECT access_token, refresh_token FROM auth_tokens').get() as { access_token: string; refresh_token: string } | undefined;
        if (row) tokens.add(row.access_token).add(row.refresh_token);
        return row;
      });
    const walletEnv = { ...env(), INDEXBOT_WALLET_KEYPAIR: keyFile, INDEXBOT_API_KEY: '' };
    const cfg = config(db, { tier: 'standard' });
    const login = await runCli(['login', '--config', cfg], walletEnv);
    expect(login.status, login.stderr).toBe(0);
    collect();
    const daemon = spawnDaemon(['--config', cfg], walletEnv);
    try {
      await waitFor('first polls', () => readDb(db, (d) => (d.prepare('SELECT COUNT(*) AS n FROM poll_jobs WHERE last_success_at IS NOT NULL').get() as { n: number }).n >= 3));
      for (let i = 0; i < 3; i++) {
        const before = collect()!.access_token;
        await control(sb, '/expire-token', { wallet: keypair.address });
        await waitFor('a refreshed pair', () => collect()!.access_token !== before);
      }
      await control(sb, '/faults', { kind: 'status', status: 500, count: 3 });
      await new Promise((r) => setTimeout(r, 2_000));
      collect();
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect(await daemon.exited).toBe(0);
    const status = await runCli(['status', '--db', db]);
    const out = daemon.output();
    expect(tokens.size).toBe(8);
    expect(out.match(/access token refreshed/g)?.length).toBe(3);
    expect([...requestStatuses(out)]).toEqual(expect.arrayContaining([200, 500, 401]));
    expectNoSecret(out + login.stdout + login.stderr + status.stdout + status.stderr, [...tokens, ...walletSecrets]);
  }, 90_000);
});
