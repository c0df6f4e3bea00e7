import { chmodSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError, makeDirectories } from '../core/index.ts';

/** A signed-in session as persisted between runs. */
export interface StoredTokens {
  baseUrl: string;
  wallet: string;
  accessToken: string;
  refreshToken: string;
  /** Epoch ms. */
  accessExpiresAt: number;
  /** Epoch ms, when known. */
  refreshExpiresAt?: number;
}

/** Where the token pair lives, so a restart does not sign in again. The SQLite store implements it too. */
export interface TokenStore {
  load(baseUrl: string): StoredTokens | undefined;
  save(tokens: StoredTokens): void;
  clear(baseUrl: string): void;
}

/** In memory only: for tests and one-off commands. */
export class MemoryTokenStore implements TokenStore {
  private readonly byUrl = new Map<string, StoredTokens>();
  load(baseUrl: string) {
    return this.byUrl.get(baseUrl);
  }
  save(tokens: StoredTokens) {
    this.byUrl.set(tokens.baseUrl, { ...tokens });
  }
  clear(baseUrl: string) {
    this.byUrl.delete(baseUrl);
  }
}

/**
 * A JSON file readable by its owner only (mode 0600), written atomically (temp file and
 * rename) so a crash mid-write leaves the previous pair intact.
 */
export class FileTokenStore implements TokenStore {
  constructor(readonly path: string) {}

  private readAll(): Record<string, StoredTokens> {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new ConfigError(`cannot read token file ${this.path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    try {
      const parsed = JSON.parse(text) as unknown;
      return parsed && typeof parsed === 'object' ? (parsed as Record<string, StoredTokens>) : {};
    } catch {
      throw new ConfigError(`token file ${this.path} is corrupt; delete it and run \`indexbot login\``);
    }
  }

  private writeAll(all: Record<string, StoredTokens>): void {
    makeDirectories(dirname(this.path));
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(all, null, 2), { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.path);
  }

  load(baseUrl: string) {
    return this.readAll()[baseUrl];
  }

  save(tokens: StoredTokens) {
    this.writeAll({ ...this.readAll(), [tokens.baseUrl]: tokens });
  }

  clear(baseUrl: string) {
    const all = this.readAll();
    delete all[baseUrl];
    this.writeAll(all);
  }
}
