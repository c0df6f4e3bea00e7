import { statSync } from 'node:fs';
import type { Command } from 'commander';
import { IndexClient } from '../api/index.ts';
import { WalletKeypair, readJwtClaims } from '../auth/index.ts';
import { type ConfigFlags, loadConfig } from '../config/index.ts';
import { ConfigError, createLogger } from '../core/index.ts';
import { SnapshotStore } from '../store/index.ts';
import { withConfigFlags } from './options.ts';

interface LoginFlags extends ConfigFlags {
  keypair?: string;
}

export function registerLoginCommand(program: Command): void {
  withConfigFlags(
    program
      .command('login')
      .description('sign in with a wallet keypair and keep the token pair in the database for later runs')
      .option('--keypair <file>', 'Solana CLI keypair file (env INDEXBOT_WALLET_KEYPAIR)'),
    'config',
    'baseUrl',
    'db',
  ).action(async (flags: LoginFlags) => {
    const config = loadConfig(flags);
    const keypairPath = flags.keypair ?? config.walletKeypairPath;
    if (!keypairPath) throw new ConfigError('no keypair: pass --keypair FILE or set INDEXBOT_WALLET_KEYPAIR');
    const logger = createLogger({ level: 'warn', format: config.logFormat });
    // Read first: a missing file is a KeypairError naming it, not stat's ENOENT (trial 25: exit 70, "a bug").
    const keypair = WalletKeypair.fromFile(keypairPath);
    if ((statSync(keypairPath).mode & 0o077) !== 0) {
      logger.warn({ file: keypairPath }, 'the keypair file is readable by group or others; chmod 600 it');
    }
    const store = SnapshotStore.open(config.db);
    try {
      const client = new IndexClient({ baseUrl: config.baseUrl, keypair, tokenStore: store, windowMs: config.windowMs, logger });
      const tokens = await client.session!.login();
      const claims = readJwtClaims(tokens.accessToken) ?? {};
      const out = process.stdout;
      out.write(`signed in to ${config.baseUrl}\n`);
      out.write(`  wallet       ${tokens.wallet}\n`);
      out.write(`  user         ${claims.sub ?? 'unknown'}\n`);
      out.write(`  permissions  ${(claims.permissions ?? []).join(', ') || 'none stated'}\n`);
      out.write(`  expires      ${new Date(tokens.accessExpiresAt).toISOString()} (refreshed automatically)\n`);
      out.write(`  stored in    ${config.db}\n`);
    } finally {
      store.close();
    }
  });
}
