import { createHash, randomBytes } from 'node:crypto';
import bs58 from 'bs58';
import { type CryptoKey, type KeyObject, SignJWT, errors as joseErrors, generateKeyPair, jwtVerify } from 'jose';
import nacl from 'tweetnacl';
import { type Tier, renderSigninMessage } from '../contract/index.ts';
import { SandboxHttpError, badParams, unauthorized } from './errors.ts';

export type KeyTier = Extract<Tier, 'basic' | 'premium' | 'enterprise'>;

export interface ApiKeySpec {
  key: string;
  name: string;
  tier: KeyTier;
  permissions: string[];
  /** Path patterns under /v1 the key may call, `*` matching anything; none means every path. */
  scopes?: string[];
}

export interface Principal {
  kind: 'key' | 'jwt';
  /** Names the rate bucket and the counters, never the secret. */
  label: string;
  tier: Tier;
  permissions: string[];
  scopes: string[] | undefined;
  wallet: string;
}

/** The outcome of authenticating a request: its principal or why it failed, and its rate bucket. */
export interface Identity {
  principal: Principal | undefined;
  /** The 401 to answer with, once the request has been counted in its bucket. */
  failure?: SandboxHttpError;
  bucket: string;
  tier: Tier;
}

export interface SandboxAuthOptions {
  keys: ApiKeySpec[];
  baseUrl: string;
  accessTokenTtlSec: number;
  refreshTokenTtlSec: number;
  nonceTtlMs: number;
  now: () => number;
  signingKey?: { privateKey: KeyObject | CryptoKey; publicKey: KeyObject | CryptoKey };
}

interface Challenge {
  wallet: string;
  message: string;
  expiresAt: number;
  used: boolean;
}

interface RefreshEntry {
  family: string;
  wallet: string;
  expiresAt: number;
  used: boolean;
}

const JWT_PERMISSIONS = ['read:index', 'read:portfolio'];
const JWT_TIER: Tier = 'standard';
const EXPIRED_HEADER = { 'WWW-Authenticate': 'Bearer error="invalid_token", error_description="token_expired"' };

const random58 = (bytes: number) => bs58.encode(randomBytes(bytes));
const userIdOf = (wallet: string) => `usr_${createHash('sha256').update(wallet).digest('hex').slice(0, 16)}`;

/** The contract's authentication: API keys, wallet sign-in, RS256 access tokens, rotating refresh tokens. */
export class SandboxAuth {
  private readonly keys = new Map<string, ApiKeySpec>();
  private readonly revokedKeys = new Set<string>();
  private readonly challenges = new Map<string, Challenge>();
  private readonly refreshTokens = new Map<string, RefreshEntry>();
  private readonly revokedFamilies = new Set<string>();
  /** Access-token nonce -> refresh family, so revoking a family also ends its access tokens. */
  private readonly accessFamily = new Map<string, string>();
  private readonly forcedExpired = new Set<string>();
  private readonly walletOfNonce = new Map<string, string>();

  private constructor(
    private readonly o: SandboxAuthOptions,
    private readonly privateKey: KeyObject | CryptoKey,
    private readonly publicKey: KeyObject | CryptoKey,
  ) {
    for (const k of o.keys) this.keys.set(k.key, k);
  }

  static async create(o: SandboxAuthOptions): Promise<SandboxAuth> {
    const pair = o.signingKey ?? (await generateKeyPair('RS256', { extractable: true }));
    return new SandboxAuth(o, pair.privateKey, pair.publicKey);
  }

  get verificationKey(): KeyObject | CryptoKey {
    return this.publicKey;
  }

  /**
   * Who sent the request, and the rate bucket it is counted in. No credential: the caller's
   * anonymous bucket. A credential that fails (`failure` set) keeps a bucket of its own, so
   * its rate headers never jump to the anonymous bucket's: the bucket of its key or user when
   * the server can prove whose it is (a revoked key, an expired or revoked token with a valid
   * signature), else one named by a digest of the credential, at the public tier's limits.
   */
  async identify(header: string | undefined, anonymousBucket: string): Promise<Identity> {
    if (header === undefined) return { principal: undefined, bucket: anonymousBucket, tier: 'public' };
    const m = /^Bearer ([^\s]+)$/.exec(header);
    if (!m) {
      const failure = new SandboxHttpError(401, 'INVALID_API_KEY', 'malformed Authorization header: expected "Bearer <credential>"', { reason: 'malformed_credentials' });
      return { principal: undefined, failure, bucket: invalidBucket(header), tier: 'public' };
    }
    const value = m[1]!;
    if (value.split('.').length === 3) return this.verifyAccessToken(value);
    const key = this.keys.get(value);
    if (!key) return { principal: undefined, failure: invalidKey(), bucket: invalidBucket(value), tier: 'public' };
    const principal: Principal = { kind: 'key', label: `key:${key.name}`, tier: key.tier, permissions: key.permissions, scopes: key.scopes, wallet: walletOfKey(key) };
    if (this.revokedKeys.has(value)) return { principal: undefined, failure: invalidKey(), bucket: principal.label, tier: principal.tier };
    return { principal, bucket: principal.label, tier: principal.tier };
  }

  private async verifyAccessToken(token: string): Promise<Identity> {
    const rejected = (failure: SandboxHttpError, bucket = invalidBucket(token), tier: Tier = 'public'): Identity => ({ principal: undefined, failure, bucket, tier });
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.publicKey, { algorithms: ['RS256'], typ: 'JWT', currentDate: new Date(this.o.now()) }));
    } catch (e) {
      if (!(e instanceof joseErrors.JWTExpired)) return rejected(unauthorized('token_invalid', 'access token is invalid'));
      // jose checked the signature before the expiry: the subject is genuine.
      const sub = e.payload.sub;
      return rejected(unauthorized('token_expired', 'access token has expired', EXPIRED_HEADER), ...(typeof sub === 'string' ? ([`jwt:${sub}`, JWT_TIER] as const) : []));
    }
    const { sub, wallet, permissions, nonce } = payload;
    if (typeof sub !== 'string' || typeof wallet !== 'string' || typeof nonce !== 'string' || !Array.isArray(permissions)) {
      return rejected(unauthorized('token_invalid', 'access token lacks required claims'));
    }
    const bucket = `jwt:${sub}`;
    const family = this.accessFamily.get(nonce);
    if (family !== undefined && this.revokedFamilies.has(family)) return rejected(unauthorized('token_invalid', 'access token has been revoked'), bucket, JWT_TIER);
    if (this.forcedExpired.has(nonce)) return rejected(unauthorized('token_expired', 'access token has expired', EXPIRED_HEADER), bucket, JWT_TIER);
    const principal: Principal = { kind: 'jwt', label: bucket, tier: JWT_TIER, permissions: permissions.map(String), scopes: undefined, wallet };
    return { principal, bucket, tier: JWT_TIER };
  }

  challenge(body: unknown): { message: string; nonce: string; expires_at: string } {
    const { wallet } = requireStrings(body, ['wallet']);
    if (!isWalletAddress(wallet)) throw badParams([{ param: 'wallet', issue: 'must be a base58 ed25519 public key (32 bytes)' }]);
    const now = this.o.now();
    const nonce = random58(16);
    const url = new URL(this.o.baseUrl);
    const expiresAt = now + this.o.nonceTtlMs;
    const message = renderSigninMessage({
      host: url.host,
      wallet,
      baseUrl: this.o.baseUrl,
      nonce,
      issuedAt: new Date(now).toISOString(),
      expiresAt: new Date(expiresAt).toISOString(),
    });
    this.challenges.set(nonce, { wallet, message, expiresAt, used: false });
    this.sweep(now);
    return { message, nonce, expires_at: new Date(expiresAt).toISOString() };
  }

  async signIn(body: unknown) {
    const { wallet, message, signature } = requireStrings(body, ['wallet', 'message', 'signature']);
    const nonce = /\nNonce: ([^\n]+)\n/.exec(message)?.[1];
    const challenge = nonce === undefined ? undefined : this.challenges.get(nonce);
    if (!challenge || challenge.used || challenge.expiresAt <= this.o.now()) {
      throw unauthorized('nonce_invalid', 'the nonce is unknown, already used or expired: request a new challenge');
    }
    // Single use, whatever the outcome: a failed attempt cannot be retried with the same nonce.
    challenge.used = true;
    if (challenge.wallet !== wallet || challenge.message !== message) {
      throw unauthorized('signature_invalid', 'the signed message is not the one issued for this wallet');
    }
    let sig: Uint8Array;
    try {
      sig = bs58.decode(signature);
    } catch {
      throw unauthorized('signature_invalid', 'signature is not base58');
    }
    const ok = sig.length === 64 && nacl.sign.detached.verify(new TextEncoder().encode(message), sig, bs58.decode(wallet));
    if (!ok) throw unauthorized('signature_invalid', 'signature does not verify against the wallet');
    return this.issue(wallet, random58(12));
  }

  async refresh(body: unknown) {
    const { refresh_token: token } = requireStrings(body, ['refresh_token']);
    const entry = this.refreshTokens.get(token);
    if (!entry || this.revokedFamilies.has(entry.family)) throw unauthorized('refresh_token_invalid', 'refresh token is invalid or revoked');
    if (entry.used) {
      this.revokedFamilies.add(entry.family);
      throw unauthorized('refresh_token_reused', 'refresh token was already used; every token of its session is revoked');
    }
    if (entry.expiresAt <= this.o.now()) throw unauthorized('refresh_token_expired', 'refresh token has expired: sign in again');
    entry.used = true;
    return this.issue(entry.wallet, entry.family);
  }

  /** Control: makes access tokens count as expired (one token, or all of a wallet's, or all). */
  expireAccessTokens(filter: { accessToken?: string; wallet?: string }): number {
    let count = 0;
    if (filter.accessToken) {
      const nonce = claimsOf(filter.accessToken)?.nonce;
      if (typeof nonce === 'string') {
        this.forcedExpired.add(nonce);
        count++;
      }
      return count;
    }
    for (const [nonce] of this.accessFamily) {
      if (filter.wallet && this.walletOfNonce.get(nonce) !== filter.wallet) continue;
      this.forcedExpired.add(nonce);
      count++;
    }
    return count;
  }

  /** Control: revokes an API key. */
  revokeKey(key: string): boolean {
    if (!this.keys.has(key)) return false;
    this.revokedKeys.add(key);
    return true;
  }

  private async issue(wallet: string, family: string) {
    const now = this.o.now();
    const iat = Math.floor(now / 1000);
    const nonce = random58(12);
    const accessToken = await new SignJWT({ wallet, permissions: JWT_PERMISSIONS, nonce })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
      .setSubject(userIdOf(wallet))
      .setIssuedAt(iat)
      .setExpirationTime(iat + this.o.accessTokenTtlSec)
      .sign(this.privateKey);
    const refreshToken = random58(32);
    this.accessFamily.set(nonce, family);
    this.walletOfNonce.set(nonce, wallet);
    this.refreshTokens.set(refreshToken, { family, wallet, expiresAt: now + this.o.refreshTokenTtlSec * 1000, used: false });
    return { access_token: accessToken, refresh_token: refreshToken, expires_in: this.o.accessTokenTtlSec };
  }

  private sweep(now: number): void {
    if (this.challenges.size < 1000) return;
    for (const [nonce, c] of this.challenges) if (c.expiresAt <= now) this.challenges.delete(nonce);
  }
}

function requireStrings<K extends string>(body: unknown, names: K[]): Record<K, string> {
  const obj = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
  const details = names.filter((n) => typeof obj[n] !== 'string' || obj[n] === '').map((n) => ({ param: n, issue: obj[n] === undefined ? 'required' : 'must be a non-empty string' }));
  if (details.length > 0) throw badParams(details);
  return obj as Record<K, string>;
}

function isWalletAddress(s: string): boolean {
  try {
    return bs58.decode(s).length === 32;
  } catch {
    return false;
  }
}

function claimsOf(token: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

const invalidKey = () => new SandboxHttpError(401, 'INVALID_API_KEY', 'API key is invalid or revoked', { reason: 'invalid_api_key' });

/** A bucket named by a digest of an unknown credential: its own, and never the secret itself. */
function invalidBucket(credential: string): string {
  return `invalid:${createHash('sha256').update(credential).digest('hex').slice(0, 16)}`;
}

/** Each API key belongs to an account with a wallet; the sandbox derives one from the key's name. */
function walletOfKey(key: ApiKeySpec): string {
  return bs58.encode(createHash('sha256').update(`wallet:${key.name}`).digest());
}
