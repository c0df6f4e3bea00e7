import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bs58 from 'bs58';
import nacl from 'tweetnacl';
import { describe, expect, it, vi } from 'vitest';
import { type AuthEndpoints, FileTokenStore, MemoryTokenStore, WalletKeypair, WalletSession } from '../../src/auth/index.ts';
import { renderSigninMessage } from '../../src/contract/index.ts';
import { AuthError, KeypairError, ManualClock, SigninRefusedError } from '../../src/core/index.ts';
import { caught } from '../helpers/caught.ts';

const BASE = 'http://127.0.0.1:7420/v1';

/** An unsigned JWT-shaped token whose claims the session reads. */
function fakeJwt(claims: Record<string, unknown>): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'RS256', typ: 'JWT' })}.${part(claims)}.sig`;
}

function endpoints(clock: ManualClock, overrides: Partial<AuthEndpoints> = {}) {
  let issued = 0;
  const pair = () => {
    issued++;
    const iat = Math.floor(clock.now() / 1000);
    return { access_token: fakeJwt({ sub: 'usr_1', iat, exp: iat + 3600, n: issued }), refresh_token: `rt_${issued}`, expires_in: 3600 };
  };
  const calls = { challenge: 0, signIn: 0, refresh: 0 };
  const e: AuthEndpoints = {
    challenge: vi.fn(async (wallet: string) => {
      calls.challenge++;
      const message = renderSigninMessage({
        host: '127.0.0.1:7420',
        wallet,
        baseUrl: BASE,
        nonce: 'n0nce',
        issuedAt: new Date(clock.now()).toISOString(),
        expiresAt: new Date(clock.now() + 300_000).toISOString(),
      });
      return { message, nonce: 'n0nce', expires_at: new Date(clock.now() + 300_000).toISOString() };
    }),
    signIn: vi.fn(async () => {
      calls.signIn++;
      return pair();
    }),
    refresh: vi.fn(async () => {
      calls.refresh++;
      await new Promise((r) => setTimeout(r, 5));
      return pair();
    }),
    ...overrides,
  };
  return { e, calls };
}

describe('WalletSession', () => {
  it('signs exactly the expected message and stores the pair', async () => {
    const clock = new ManualClock();
    const keypair = WalletKeypair.generate();
    const signed: { message: string; signature: string }[] = [];
    const { e } = endpoints(clock);
    const signIn = e.signIn;
    e.signIn = async (body) => {
      signed.push(body);
      return signIn(body);
    };
    const store = new MemoryTokenStore();
    const s = new WalletSession({ baseUrl: BASE, endpoints: e, store, keypair, clock });
    const token = await s.accessToken();
    expect(token.split('.')).toHaveLength(3);
    const { message, signature } = signed[0]!;
    expect(nacl.sign.detached.verify(new TextEncoder().encode(message), bs58.decode(signature), keypair.publicKey)).toBe(true);
    expect(store.load(BASE)).toMatchObject({ wallet: keypair.address, refreshToken: 'rt_1' });
  });

  const tampered: [string, (m: string) => string][] = [
    ['another base URL', (m) => m.replace(`URI: ${BASE}`, 'URI: https://evil.example/v1')],
    ['another host', (m) => m.replace('127.0.0.1:7420 wants', 'evil.example wants')],
    ['another nonce', (m) => m.replace('Nonce: n0nce', 'Nonce: other')],
    ['an extra line', (m) => `${m}\nResources:\n- https://evil.example/transfer`],
    ['a changed statement', (m) => m.replace('Sign in to the Index Fund Data Service.', 'Approve transfer of all funds.')],
    ['a malformed timestamp', (m) => m.replace(/Issued At: .*/, 'Issued At: yesterday')],
  ];
  for (const [what, tamper] of tampered) {
    it(`refuses to sign a message with ${what}`, async () => {
      const clock = new ManualClock();
      const { e, calls } = endpoints(clock);
      const original = e.challenge;
      e.challenge = async (wallet) => {
        const c = await original(wallet);
        return { ...c, message: tamper(c.message) };
      };
      const s = new WalletSession({ baseUrl: BASE, endpoints: e, store: new MemoryTokenStore(), keypair: WalletKeypair.generate(), clock });
      await expect(s.accessToken()).rejects.toBeInstanceOf(SigninRefusedError);
      expect(calls.signIn).toBe(0);
    });
  }

  it('refuses a message naming another wallet', async () => {
    const clock = new ManualClock();
    const { e, calls } = endpoints(clock);
    const original = e.challenge;
    e.challenge = (_wallet) => original(WalletKeypair.generate().address);
    const s = new WalletSession({ baseUrl: BASE, endpoints: e, store: new MemoryTokenStore(), keypair: WalletKeypair.generate(), clock });
    await expect(s.accessToken()).rejects.toThrow(/unexpected wallet/);
    expect(calls.signIn).toBe(0);
  });

  it('shares one refresh among 20 concurrent callers that met an expired token', async () => {
    const clock = new ManualClock();
    const { e, calls } = endpoints(clock);
    const s = new WalletSession({ baseUrl: BASE, endpoints: e, store: new MemoryTokenStore(), keypair: WalletKeypair.generate(), clock });
    const first = await s.accessToken();
    const tokens = await Promise.all(Array.from({ length: 20 }, () => s.tokenExpired(first)));
    expect(calls.refresh).toBe(1);
    expect(new Set(tokens).size).toBe(1);
    expect(tokens[0]).not.toBe(first);
    // A late caller holding the old token gets the new one without another refresh.
    expect(await s.tokenExpired(first)).toBe(tokens[0]);
    expect(calls.refresh).toBe(1);
  });

  it('refreshes shortly before exp, not after', async () => {
    const clock = new ManualClock();
    const { e, calls } = endpoints(clock);
    const s = new WalletSession({ baseUrl: BASE, endpoints: e, store: new MemoryTokenStore(), keypair: WalletKeypair.generate(), clock, refreshMarginMs: 60_000 });
    const t1 = await s.accessToken();
    await clock.advance(3600_000 - 61_000);
    expect(await s.accessToken()).toBe(t1);
    await clock.advance(2_000);
    expect(await s.accessToken()).not.toBe(t1);
    expect(calls.refresh).toBe(1);
  });

  it('signs in again with the wallet when the refresh token is rejected', async () => {
    const clock = new ManualClock();
    const rejected = new AuthError({ endpoint: 'POST /auth/refresh', status: 401, apiCode: 'UNAUTHORIZED', reason: 'refresh_token_reused', message: 'reused' });
    const { e, calls } = endpoints(clock, { refresh: async () => Promise.reject(rejected) });
    const s = new WalletSession({ baseUrl: BASE, endpoints: e, store: new MemoryTokenStore(), keypair: WalletKeypair.generate(), clock });
    const t1 = await s.accessToken();
    const t2 = await s.tokenExpired(t1);
    expect(t2).not.toBe(t1);
    expect(calls.signIn).toBe(2);
  });

  it('tells the operator to run `indexbot login` when it cannot refresh and has no keypair', async () => {
    const clock = new ManualClock();
    const store = new MemoryTokenStore();
    store.save({ baseUrl: BASE, wallet: 'W', accessToken: fakeJwt({ sub: 'usr_1', exp: 1 }), refreshToken: 'rt_old', accessExpiresAt: 1000 });
    const rejected = new AuthError({ endpoint: 'POST /auth/refresh', status: 401, apiCode: 'UNAUTHORIZED', reason: 'refresh_token_expired', message: 'expired' });
    const { e } = endpoints(clock, { refresh: async () => Promise.reject(rejected) });
    const s = new WalletSession({ baseUrl: BASE, endpoints: e, store, clock });
    const err = await s.accessToken().catch((x: unknown) => x);
    expect(err).toBeInstanceOf(AuthError);
    expect((err as AuthError).message).toContain('indexbot login');
    expect(store.load(BASE)).toBeUndefined();
  });

  it('keeps a refreshed pair it could not store (full disk) and stores it at the next use', async () => {
    const clock = new ManualClock();
    const { e } = endpoints(clock);
    const inner = new MemoryTokenStore();
    let full = false;
    const store = {
      load: (b: string) => inner.load(b),
      clear: (b: string) => inner.clear(b),
      save: (t: Parameters<MemoryTokenStore['save']>[0]) => {
        if (full) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
        inner.save(t);
      },
    };
    const warnings: object[] = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (o: object) => warnings.push(o), child: () => logger };
    const s = new WalletSession({ baseUrl: BASE, endpoints: e, store, keypair: WalletKeypair.generate(), clock, logger });
    const t1 = await s.accessToken();
    full = true;
    const t2 = await s.tokenExpired(t1);
    expect(t2).not.toBe(t1);
    expect(inner.load(BASE)!.accessToken).toBe(t1);
    expect(warnings).toEqual([expect.objectContaining({ error: expect.objectContaining({ code: 'SQLITE_FULL' }) })]);
    expect(await s.accessToken()).toBe(t2);
    expect(inner.load(BASE)!.accessToken).toBe(t1);
    full = false;
    expect(await s.accessToken()).toBe(t2);
    expect(inner.load(BASE)).toMatchObject({ accessToken: t2, refreshToken: 'rt_2' });
    expect(JSON.stringify(warnings)).not.toContain('rt_2');
  });

  it('uses a stored pair after a restart instead of signing in again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-tokens-'));
    const path = join(dir, 'tokens.json');
    const clock = new ManualClock();
    const keypair = WalletKeypair.generate();
    const first = endpoints(clock);
    await new WalletSession({ baseUrl: BASE, endpoints: first.e, store: new FileTokenStore(path), keypair, clock }).accessToken();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const second = endpoints(clock);
    const token = await new WalletSession({ baseUrl: BASE, endpoints: second.e, store: new FileTokenStore(path), keypair, clock }).accessToken();
    expect(second.calls.signIn + second.calls.challenge + second.calls.refresh).toBe(0);
    expect(JSON.parse(readFileSync(path, 'utf8'))[BASE].accessToken).toBe(token);
  });
});

describe('WalletKeypair', () => {
  it('loads a Solana CLI keypair file and signs with it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-kp-'));
    const original = WalletKeypair.generate();
    const path = join(dir, 'id.json');
    writeFileSync(path, original.toFileJson());
    const loaded = WalletKeypair.fromFile(path);
    expect(loaded.address).toBe(original.address);
    const sig = bs58.decode(loaded.signMessage('hello'));
    expect(nacl.sign.detached.verify(new TextEncoder().encode('hello'), sig, original.publicKey)).toBe(true);
  });

  it('loads a base58 secret key', () => {
    const pair = nacl.sign.keyPair();
    expect(WalletKeypair.fromBase58(bs58.encode(pair.secretKey)).address).toBe(bs58.encode(pair.publicKey));
  });

  it('rejects bad files with a clear error that never shows the key bytes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'indexbot-kp-'));
    const write = (name: string, text: string) => {
      const p = join(dir, name);
      writeFileSync(p, text);
      return p;
    };
    const secret = Array.from(nacl.sign.keyPair().secretKey);
    const inconsistent = [...secret.slice(0, 32), ...Array.from(nacl.sign.keyPair().publicKey)];
    const cases: [string, RegExp][] = [
      [write('notjson', 'abc'), /not JSON/],
      [write('short', JSON.stringify(secret.slice(0, 63))), /64 byte values/],
      [write('range', JSON.stringify([...secret.slice(0, 63), 256])), /64 byte values/],
      [write('mismatch', JSON.stringify(inconsistent)), /inconsistent/],
      [join(dir, 'missing.json'), /keypair file .*missing\.json does not exist$/],
    ];
    for (const [path, message] of cases) {
      const err = caught(() => WalletKeypair.fromFile(path));
      expect(err).toBeInstanceOf(KeypairError);
      expect(err.message).toMatch(message);
      expect(err.message).not.toContain(String(secret.slice(0, 8)));
    }
    expect(JSON.stringify(WalletKeypair.generate())).toMatch(/^\{"address":"\w+"\}$/);
  });
});
