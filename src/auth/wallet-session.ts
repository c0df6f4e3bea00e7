import { type Challenge, signinMessageMismatch, type TokenPair } from '../contract/index.ts';
import { AuthError, type Clock, type Logger, SigninRefusedError, errorFields, silentLogger, systemClock } from '../core/index.ts';
import { readJwtClaims } from './jwt.ts';
import type { WalletKeypair } from './keypair.ts';
import type { StoredTokens, TokenStore } from './token-store.ts';

/** The three auth calls, provided by the API client so this module knows no HTTP. */
export interface AuthEndpoints {
  challenge(wallet: string): Promise<Challenge>;
  signIn(body: { wallet: string; message: string; signature: string }): Promise<TokenPair>;
  refresh(refreshToken: string): Promise<TokenPair>;
}

export interface WalletSessionOptions {
  /** The API base URL, ending in `/v1`; the sign-in message must name it. */
  baseUrl: string;
  endpoints: AuthEndpoints;
  store: TokenStore;
  /** Without a keypair the session can only use and refresh stored tokens. */
  keypair?: WalletKeypair;
  /** @default systemClock */
  clock?: Clock;
  /**
   * Refresh this long before the access token's `exp`, so requests do not meet an expired token.
   * @default 300000
   */
  refreshMarginMs?: number;
  /** @default 30 days, the spec's refresh-token lifetime */
  refreshTokenTtlMs?: number;
  /** @default silentLogger */
  logger?: Logger;
}

const LOGIN_HINT = 'run `indexbot login` (or set INDEXBOT_WALLET_KEYPAIR) to sign in again';

/**
 * Holds the access/refresh token pair of a wallet sign-in. Every path that changes the pair
 * (proactive refresh, refresh after a `token_expired` 401, sign-in) goes through one
 * in-flight promise, so concurrent callers share a single refresh call.
 */
export class WalletSession {
  private readonly baseUrl: string;
  private readonly endpoints: AuthEndpoints;
  private readonly store: TokenStore;
  private readonly keypair: WalletKeypair | undefined;
  private readonly clock: Clock;
  private readonly refreshMarginMs: number;
  private readonly refreshTokenTtlMs: number;
  private readonly logger: Logger;
  private tokens: StoredTokens | undefined;
  private loaded = false;
  private inflight: Promise<StoredTokens> | undefined;
  private unsaved = false;

  constructor(options: WalletSessionOptions) {
    this.baseUrl = options.baseUrl;
    this.endpoints = options.endpoints;
    this.store = options.store;
    this.keypair = options.keypair;
    this.clock = options.clock ?? systemClock;
    this.refreshMarginMs = options.refreshMarginMs ?? 300_000;
    this.refreshTokenTtlMs = options.refreshTokenTtlMs ?? 30 * 86_400_000;
    this.logger = options.logger ?? silentLogger;
  }

  /** The stored pair, if any (loaded once from the store). */
  current(): StoredTokens | undefined {
    if (!this.loaded) {
      this.loaded = true;
      const stored = this.store.load(this.baseUrl);
      if (stored && (!this.keypair || stored.wallet === this.keypair.address)) this.tokens = stored;
    }
    return this.tokens;
  }

  /** True when this session can authenticate requests (stored tokens or a keypair). */
  get usable(): boolean {
    return this.keypair !== undefined || this.current() !== undefined;
  }

  /** The JWT subject, which names this session's rate bucket. */
  subject(): string | undefined {
    const t = this.current();
    return t ? (readJwtClaims(t.accessToken)?.sub ?? t.wallet) : this.keypair?.address;
  }

  /** A usable access token: signs in or refreshes first when there is none or it is about to expire. */
  async accessToken(): Promise<string> {
    this.persist();
    const t = this.current();
    if (!t) return (await this.once(() => this.signIn())).accessToken;
    if (t.accessExpiresAt - this.clock.now() <= this.refreshMarginMs) {
      return (await this.once(() => this.refreshOrSignIn(t))).accessToken;
    }
    return t.accessToken;
  }

  /** The server said `used` has expired: refresh once (shared with concurrent callers). */
  async tokenExpired(used: string): Promise<string> {
    if (this.inflight) return (await this.inflight).accessToken;
    const t = this.current();
    if (t && t.accessToken !== used) return t.accessToken;
    return (await this.once(() => (t ? this.refreshOrSignIn(t) : this.signIn()))).accessToken;
  }

  /** Signs in with the wallet now, replacing any stored pair. */
  async login(): Promise<StoredTokens> {
    return this.once(() => this.signIn());
  }

  private once(work: () => Promise<StoredTokens>): Promise<StoredTokens> {
    this.inflight ??= work().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async refreshOrSignIn(t: StoredTokens): Promise<StoredTokens> {
    const refreshUsable = t.refreshExpiresAt === undefined || t.refreshExpiresAt > this.clock.now();
    if (refreshUsable) {
      try {
        const pair = await this.endpoints.refresh(t.refreshToken);
        this.logger.info({ wallet: t.wallet }, 'access token refreshed');
        return this.keep(pair, t.wallet);
      } catch (e) {
        if (!(e instanceof AuthError)) throw e;
        this.logger.warn({ wallet: t.wallet, reason: e.reason ?? e.apiCode }, 'refresh token rejected');
      }
    }
    this.tokens = undefined;
    this.store.clear(this.baseUrl);
    if (!this.keypair) {
      throw new AuthError({
        endpoint: 'POST /auth/refresh',
        status: 401,
        apiCode: 'UNAUTHORIZED',
        reason: 'refresh_token_expired',
        message: `the session can no longer be refreshed; ${LOGIN_HINT}`,
      });
    }
    return this.signIn();
  }

  private async signIn(): Promise<StoredTokens> {
    const keypair = this.keypair;
    if (!keypair) {
      throw new AuthError({
        endpoint: 'POST /auth/wallet',
        status: 401,
        apiCode: 'UNAUTHORIZED',
        reason: 'missing_credentials',
        message: `not signed in; ${LOGIN_HINT}`,
      });
    }
    const challenge = await this.endpoints.challenge(keypair.address);
    const why = signinMessageMismatch(challenge.message, {
      host: new URL(this.baseUrl).host,
      wallet: keypair.address,
      baseUrl: this.baseUrl,
      nonce: challenge.nonce,
    });
    if (why) throw new SigninRefusedError(`refusing to sign the server's sign-in message: ${why}`);
    const pair = await this.endpoints.signIn({
      wallet: keypair.address,
      message: challenge.message,
      signature: keypair.signMessage(challenge.message),
    });
    this.logger.info({ wallet: keypair.address }, 'signed in with wallet');
    return this.keep(pair, keypair.address);
  }

  private keep(pair: TokenPair, wallet: string): StoredTokens {
    const now = this.clock.now();
    const exp = readJwtClaims(pair.access_token)?.exp;
    const tokens: StoredTokens = {
      baseUrl: this.baseUrl,
      wallet,
      accessToken: pair.access_token,
      refreshToken: pair.refresh_token,
      accessExpiresAt: typeof exp === 'number' ? exp * 1000 : now + pair.expires_in * 1000,
      refreshExpiresAt: now + this.refreshTokenTtlMs,
    };
    this.tokens = tokens;
    this.loaded = true;
    this.unsaved = true;
    this.persist();
    return tokens;
  }

  /**
   * The pair is already in use (the old refresh token is spent), so a store that cannot take
   * it now (a full disk) must not fail the request: it is kept in memory and saved at a
   * later use, so a restart does not come back with a spent refresh token.
   */
  private persist(): void {
    if (!this.unsaved || !this.tokens) return;
    try {
      this.store.save(this.tokens);
      this.unsaved = false;
    } catch (e) {
      this.logger.warn({ wallet: this.tokens.wallet, error: errorFields(e) }, 'could not store the new token pair; kept in memory, saved at the next request');
    }
  }
}
