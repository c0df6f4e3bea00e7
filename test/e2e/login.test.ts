import { chmodSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/api/index.ts';
import { WalletKeypair } from '../../src/auth/index.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { runCli as cli } from '../helpers/daemon.ts';
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
