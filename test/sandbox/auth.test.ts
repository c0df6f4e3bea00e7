import { createHmac } from 'node:crypto';
import { type CryptoKey, SignJWT, exportSPKI, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WalletKeypair } from '../../src/auth/index.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { control, raw, testSandbox } from '../helpers/sandbox.ts';

let sb: Sandbox;
let keys: { privateKey: CryptoKey; publicKey: CryptoKey };
let fakeNow = Date.now();

const post = (s: Sandbox, path: string, body: unknown) => raw(`${s.baseUrl}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
const withToken = (s: Sandbox, token: string, path = '/user/portfolio') => raw(`${s.baseUrl}${path}`, { headers: { Authorization: `Bearer ${token}` } });

async function signIn(s: Sandbox, wallet = WalletKeypair.generate()) {
  const challenge = (await post(s, '/auth/challenge', { wallet: wallet.address })).json.data;
  const res = await post(s, '/auth/wallet', { wallet: wallet.address, message: challenge.message, signature: wallet.signMessage(challenge.message) });
  expect(res.status).toBe(200);
  return { wallet, pair: res.json.data as { access_token: string; refresh_token: string; expires_in: number }, challenge };
}

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));

function expect401(res: { status: number; json: any }, reason: string) {
  expect(res.status).toBe(401);
  expect(res.json.error).toMatchObject({ code: 'UNAUTHORIZED', reason });
}

beforeAll(async () => {
  keys = await generateKeyPair('RS256', { extractable: true });
  sb = await testSandbox({ signingKey: keys, accessTokenTtlSec: 600, nonceTtlMs: 60_000, realNow: () => fakeNow });
});
afterAll(() => sb.close());

describe('wallet sign-in', () => {
  it('issues an RS256 token pair with the contract claims', async () => {
    const { wallet, pair } = await signIn(sb);
    const [header] = pair.access_token.split('.');
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString())).toEqual({ alg: 'RS256', typ: 'JWT' });
    const claims = claimsOf(pair.access_token);
    expect(claims).toMatchObject({ wallet: wallet.address, permissions: ['read:index', 'read:portfolio'] });
    expect(claims.sub).toMatch(/^usr_/);
    expect(claims.exp - claims.iat).toBe(600);
    expect(typeof claims.nonce).toBe('string');
    expect(pair.expires_in).toBe(600);
    const portfolio = await withToken(sb, pair.access_token);
    expect(portfolio.status).toBe(200);
    expect(portfolio.json.data.wallet).toBe(wallet.address);
  });

  it('the challenge message names the wallet, the base URL and the nonce', async () => {
    const wallet = WalletKeypair.generate();
    const c = (await post(sb, '/auth/challenge', { wallet: wallet.address })).json.data;
    expect(c.message).toContain(`\n${wallet.address}\n`);
    expect(c.message).toContain(`URI: ${sb.baseUrl}\n`);
    expect(c.message).toContain(`Nonce: ${c.nonce}\n`);
    expect((await post(sb, '/auth/challenge', { wallet: 'not-base58-0OIl' })).status).toBe(400);
    expect((await post(sb, '/auth/challenge', {})).json.error.details).toEqual([{ param: 'wallet', issue: 'required' }]);
  });

  it('rejects a signature made by another key', async () => {
    const wallet = WalletKeypair.generate();
    const c = (await post(sb, '/auth/challenge', { wallet: wallet.address })).json.data;
    const res = await post(sb, '/auth/wallet', { wallet: wallet.address, message: c.message, signature: WalletKeypair.generate().signMessage(c.message) });
    expect401(res, 'signature_invalid');
  });

  it('rejects a reused nonce', async () => {
    const { wallet, challenge } = await signIn(sb);
    const again = await post(sb, '/auth/wallet', { wallet: wallet.address, message: challenge.message, signature: wallet.signMessage(challenge.message) });
    expect401(again, 'nonce_invalid');
  });

  it('rejects an expired nonce', async () => {
    const wallet = WalletKeypair.generate();
    const c = (await post(sb, '/auth/challenge', { wallet: wallet.address })).json.data;
    fakeNow += 61_000;
    const res = await post(sb, '/auth/wallet', { wallet: wallet.address, message: c.message, signature: wallet.signMessage(c.message) });
    expect401(res, 'nonce_invalid');
  });

  it('rejects a message altered after the challenge, even when signed', async () => {
    const wallet = WalletKeypair.generate();
    const c = (await post(sb, '/auth/challenge', { wallet: wallet.address })).json.data;
    const altered = c.message.replace('Sign in to the Index Fund Data Service.', 'Sign in to something else.');
    const res = await post(sb, '/auth/wallet', { wallet: wallet.address, message: altered, signature: wallet.signMessage(altered) });
    expect401(res, 'signature_invalid');
  });
});

describe('access tokens', () => {
  it('rejects alg none', async () => {
    const { pair } = await signIn(sb);
    const token = `${b64({ alg: 'none', typ: 'JWT' })}.${pair.access_token.split('.')[1]}.`;
    expect401(await withToken(sb, token), 'token_invalid');
  });

  it('rejects an HS256 token signed with the RSA public key as the secret', async () => {
    const { pair } = await signIn(sb);
    const pem = await exportSPKI(keys.publicKey);
    const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${pair.access_token.split('.')[1]}`;
    const sig = createHmac('sha256', pem).update(head).digest('base64url');
    expect401(await withToken(sb, `${head}.${sig}`), 'token_invalid');
  });

  it('rejects a tampered payload', async () => {
    const { pair } = await signIn(sb);
    const [h, p, s] = pair.access_token.split('.');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const forged = `${h}.${b64({ ...claims, permissions: [...claims.permissions, 'write:transactions'] })}.${s}`;
    expect401(await withToken(sb, forged), 'token_invalid');
  });

  it('rejects a token signed by another RSA key', async () => {
    const other = await generateKeyPair('RS256');
    const { pair } = await signIn(sb);
    const claims = claimsOf(pair.access_token);
    const token = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT' }).sign(other.privateKey);
    expect401(await withToken(sb, token), 'token_invalid');
  });

  it('answers an expired token with 401 token_expired and the WWW-Authenticate header', async () => {
    const { pair } = await signIn(sb);
    fakeNow += 601_000;
    const res = await withToken(sb, pair.access_token);
    expect401(res, 'token_expired');
    expect(res.headers['www-authenticate']).toBe('Bearer error="invalid_token", error_description="token_expired"');
  });

  it('the control route expires a token on demand', async () => {
    const { pair } = await signIn(sb);
    expect((await withToken(sb, pair.access_token)).status).toBe(200);
    expect((await control(sb, '/expire-token', { access_token: pair.access_token })).json.data.expired).toBe(1);
    expect401(await withToken(sb, pair.access_token), 'token_expired');
  });
});

describe('refresh tokens', () => {
  it('rotates: each refresh returns a new pair and invalidates the old refresh token', async () => {
    const { pair } = await signIn(sb);
    const next = (await post(sb, '/auth/refresh', { refresh_token: pair.refresh_token })).json.data;
    expect(next.refresh_token).not.toBe(pair.refresh_token);
    expect((await withToken(sb, next.access_token)).status).toBe(200);
  });

  it('a reused refresh token revokes the whole family', async () => {
    const { pair } = await signIn(sb);
    const second = (await post(sb, '/auth/refresh', { refresh_token: pair.refresh_token })).json.data;
    expect401(await post(sb, '/auth/refresh', { refresh_token: pair.refresh_token }), 'refresh_token_reused');
    expect401(await post(sb, '/auth/refresh', { refresh_token: second.refresh_token }), 'refresh_token_invalid');
    expect401(await withToken(sb, second.access_token), 'token_invalid');
  });

  it('rejects an unknown refresh token and a missing body field', async () => {
    expect401(await post(sb, '/auth/refresh', { refresh_token: 'nope' }), 'refresh_token_invalid');
    expect((await post(sb, '/auth/refresh', {})).status).toBe(400);
  });
});
