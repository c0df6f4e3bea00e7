import { chmodSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/api/index.ts';
import { WalletKeypair } from '../../src/auth/index.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { runCli as cli, spawnDaemon, waitFor, writeConfig } from '../helpers/daemon.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

let sb: Sandbox;
beforeAll(async () => {
  sb = await testSandbox({ speed: 1, startTime: Date.now() });
});
afterAll(() => sb.close());

describe('indexbot login', () => {
  it('signs in from a keypair file, stores the pair, and a later client uses it without the keypair', async () => {
    const db = tempDbPath();
    const keypair = WalletKeypair.generate();
    const file = join(dirname(db), 'id.json');
    writeFileSync(file, keypair.toFileJson());
    chmodSync(file, 0o644);
    const res = await cli(['login', '--base-url', sb.baseUrl, '--db', db, '--keypair', file], { INDEXBOT_LOG_FORMAT: 'json' });
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toContain(`wallet       ${keypair.address}`);
    expect(res.stdout).toContain('permissions  read:index, read:portfolio');
    expect(res.stdout).toMatch(/expires {6}\d{4}-\d{2}-\d{2}T/);
    expect(res.stderr).toContain('readable by group or others');
    expect(res.stdout + res.stderr).not.toMatch(/eyJ[\w-]+\.eyJ/);

    const store = SnapshotStore.open(db);
    try {
      const portfolio = await new IndexClient({ baseUrl: sb.baseUrl, tokenStore: store }).getPortfolio();
      expect(portfolio.wallet).toBe(keypair.address);
    } finally {
      store.close();
    }
  });

  it('a later doctor, run or backfill on that database signs in with the kept pair, at the wallet tier when none is set (found by trial 26: public)', async () => {
    const db = tempDbPath();
    const file = join(dirname(db), 'id.json');
    writeFileSync(file, WalletKeypair.generate().toFileJson(), { mode: 0o600 });
    expect((await cli(['login', '--base-url', sb.baseUrl, '--db', db, '--keypair', file], {})).status).toBe(0);
    // No tier in the file, no key nor keypair in the environment: the pair in the database is the credential.
    const config = writeConfig(db, { baseUrl: sb.baseUrl, db, indexes: ['sindex'] });
    const env = { INDEXBOT_WALLET_KEYPAIR: '', INDEXBOT_API_KEY: '', INDEXBOT_LOG_FORMAT: 'json' };
    const doctor = await cli(['doctor', '--config', config], env);
    expect(doctor.stdout).toContain('PASS  credentials      wallet sign-in kept by `indexbot login` accepted');
    expect(doctor.stdout).toMatch(/PASS {2}rate limits +the server's X-RateLimit-Limit agrees with tier standard \(120 per window\)/);
    const run = spawnDaemon(['--config', config], env);
    try {
      await waitFor('the start', () => run.output().includes('indexbot running'), 30_000);
      expect(run.output()).toMatch(/"tier":"standard"[^\n]*"msg":"indexbot running"/);
    } finally {
      run.child.kill('SIGTERM');
    }
    expect(await run.exited).toBe(0);
  }, 60_000);

  it('says what is missing without a keypair', async () => {
    const res = await cli(['login', '--base-url', sb.baseUrl, '--db', tempDbPath()], { INDEXBOT_WALLET_KEYPAIR: '' });
    expect(res.status).not.toBe(0);
    expect(res.stderr).toContain('no keypair: pass --keypair FILE or set INDEXBOT_WALLET_KEYPAIR');
  });

  it('names a keypair file that does not exist, as a config error, from the flag or the environment (found by trial 25: exit 70 "a bug", or the path redacted)', async () => {
    const db = tempDbPath();
    const missing = join(dirname(db), 'nokey.json');
    for (const [args, env] of [
      [['--keypair', missing], {}],
      [[], { INDEXBOT_WALLET_KEYPAIR: missing }],
    ] as const) {
      const res = await cli(['login', '--base-url', sb.baseUrl, '--db', db, ...args], env);
      expect(res.stderr).toBe(`indexbot: keypair file ${missing} does not exist [WALLET_KEYPAIR_INVALID]\n`);
      expect(res.status).toBe(78);
    }
  });
});
