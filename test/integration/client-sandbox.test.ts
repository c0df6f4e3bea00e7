import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/api/index.ts';
import { FileTokenStore, MemoryTokenStore, WalletKeypair } from '../../src/auth/index.ts';
import { AuthError, MalformedResponseError, NetworkError, ServerError, TimeoutError, createLogger } from '../../src/core/index.ts';
import { type Sandbox, demoKey } from '../../src/sandbox/index.ts';
import { control, raw, testSandbox } from '../helpers/sandbox.ts';

let sb: Sandbox;
beforeAll(async () => {
  sb = await testSandbox();
});
afterAll(() => sb.close());

const routeCount = (counters: { byRoute: Record<string, Record<string, number>> }, route: string) => Object.values(counters.byRoute[route] ?? {}).reduce((a, b) => a + b, 0);

describe('client against the sandbox', () => {
  it('pages to the end in both paging styles, never past the total', async () => {
    const s = await testSandbox();
    try {
      const byPage = await new IndexClient({ baseUrl: s.baseUrl, apiKey: s.keys.premium, pageSize: 10 }).iterateTokens().toArray();
      expect(byPage.length).toBe(79);
      expect(routeCount(s.counters(), 'GET /tokens')).toBe(8);
      const byOffset = await new IndexClient({ baseUrl: s.baseUrl, apiKey: s.keys.premium, pageSize: 10, paging: 'offset' }).iterateTokens().toArray();
      expect(byOffset.map((t) => t.address)).toEqual(byPage.map((t) => t.address));
      expect(routeCount(s.counters(), 'GET /tokens')).toBe(16);
    } finally {
      await s.close();
    }
  });

  it('waits out a 429 until the reset: the server sees no request before it', async () => {
    const tight = demoKey('enterprise', { name: 'tight' });
    // A token every 2 s: emptying the bucket takes far less than that even on a busy machine.
    const s = await testSandbox({ apiKeys: [tight], enterpriseLimits: { limit: 4, burst: 4 }, rateWindowMs: 8_000 });
    try {
      // Another process on the same key empties the bucket.
      for (let i = 0; i < 4; i++) await raw(`${s.baseUrl}/tokens`, { headers: { Authorization: `Bearer ${tight.key}` } });
      const client = new IndexClient({ baseUrl: s.baseUrl, apiKey: tight.key, tier: 'enterprise', enterpriseLimits: { limit: 4, burst: 4 }, windowMs: 8_000 });
      const comp = await client.getComposition('sindex');
      expect(comp.index_id).toBe('sindex');
      // One 429 and two requests in all: a retry sent before the bucket held a token again would
      // have drawn a second 429. (How long that took depends on how fast the bucket was emptied.)
      const counters = s.counters();
      expect(counters.rateLimited).toBe(1);
      expect(routeCount(counters, 'GET /indexes/{id}/composition')).toBe(2);
    } finally {
      await s.close();
    }
  });

  it('paces to the public tier on a short window without a single 429', async () => {
    const s = await testSandbox({ rateWindowMs: 1_000 });
    try {
      const client = new IndexClient({ baseUrl: s.baseUrl, windowMs: 1_000 });
      const results = await Promise.all(Array.from({ length: 150 }, () => client.getIndex('sindex')));
      expect(results).toHaveLength(150);
      expect(s.counters().rateLimited).toBe(0);
    } finally {
      await s.close();
    }
  });

  it('20 concurrent requests meeting an expired token cause exactly one refresh', async () => {
    const keypair = WalletKeypair.generate();
    const client = new IndexClient({ baseUrl: sb.baseUrl, keypair, tokenStore: new MemoryTokenStore() });
    await client.getPortfolio();
    await control(sb, '/expire-token', { wallet: keypair.address });
    const before = routeCount(sb.counters(), 'POST /auth/refresh');
    const results = await Promise.all(Array.from({ length: 20 }, () => client.getPortfolio()));
    expect(results.every((p) => p.wallet === keypair.address)).toBe(true);
    expect(routeCount(sb.counters(), 'POST /auth/refresh') - before).toBe(1);
  });

  it('keeps the token pair across restarts: a second client does not sign in again', async () => {
    const s = await testSandbox();
    try {
      const path = join(mkdtempSync(join(tmpdir(), 'indexbot-it-')), 'tokens.json');
      const keypair = WalletKeypair.generate();
      await new IndexClient({ baseUrl: s.baseUrl, keypair, tokenStore: new FileTokenStore(path) }).getPortfolio();
      await new IndexClient({ baseUrl: s.baseUrl, keypair, tokenStore: new FileTokenStore(path) }).getPortfolio();
      expect(routeCount(s.counters(), 'POST /auth/wallet')).toBe(1);
      expect(routeCount(s.counters(), 'GET /user/portfolio')).toBe(2);
    } finally {
      await s.close();
    }
  });

  it('tells the operator to run `indexbot login` when the session is revoked and no keypair is configured', async () => {
    const store = new MemoryTokenStore();
    const keypair = WalletKeypair.generate();
    await new IndexClient({ baseUrl: sb.baseUrl, keypair, tokenStore: store }).getPortfolio();
    const stored = store.load(sb.baseUrl)!;
    // Someone replays the refresh token: the family is revoked.
    const refresh = (t: string) => raw(`${sb.baseUrl}/auth/refresh`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ refresh_token: t }) });
    await refresh(stored.refreshToken);
    await refresh(stored.refreshToken);
    const noWallet = new IndexClient({ baseUrl: sb.baseUrl, tokenStore: store });
    const err = await noWallet.getPortfolio().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthError);
    expect((err as AuthError).message).toContain('indexbot login');
    // With the keypair it signs in again by itself.
    store.save(stored);
    const withWallet = new IndexClient({ baseUrl: sb.baseUrl, keypair, tokenStore: store });
    await expect(withWallet.getPortfolio()).resolves.toMatchObject({ wallet: keypair.address });
  });

  it('rides out a burst of 503s', async () => {
    await control(sb, '/faults', { kind: 'status', status: 503, count: 2, path_prefix: '/indexes/nindex/performance' });
    const before = routeCount(sb.counters(), 'GET /indexes/{id}/performance');
    const client = new IndexClient({ baseUrl: sb.baseUrl, apiKey: sb.keys.premium, retryBaseMs: 10 });
    await expect(client.getPerformance('nindex')).resolves.toMatchObject({ index_id: 'nindex' });
    expect(routeCount(sb.counters(), 'GET /indexes/{id}/performance') - before).toBe(3);
  });

  it('reports a malformed JSON body and an HTML 502 clearly', async () => {
    const client = new IndexClient({ baseUrl: sb.baseUrl, apiKey: sb.keys.premium, retries: 1, retryBaseMs: 10 });
    await control(sb, '/faults', { kind: 'malformed', count: 1, path_prefix: '/indexes/sindex/composition' });
    await expect(client.getComposition('sindex')).rejects.toBeInstanceOf(MalformedResponseError);
    await control(sb, '/faults', { kind: 'html', count: 2, path_prefix: '/indexes/sindex/composition' });
    const err = await client.getComposition('sindex').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect((err as ServerError).message).toMatch(/HTTP 502.*non-JSON error body \(text\/html\)/);
  });

  it('times out a slow response with a TimeoutError', async () => {
    await control(sb, '/faults', { kind: 'delay', delay_ms: 1_000, count: 1, path_prefix: '/indexes/aindex' });
    const client = new IndexClient({ baseUrl: sb.baseUrl, apiKey: sb.keys.premium, timeoutMs: 100, retries: 0 });
    const err = await client.getIndex('aindex').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err).toMatchObject({ timeoutMs: 100, endpoint: 'GET /indexes/aindex', message: `no response from GET /indexes/aindex at ${sb.baseUrl} within 100 ms` });
  });

  it('reports a refused connection as a NetworkError', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const client = new IndexClient({ baseUrl: `http://127.0.0.1:${port}/v1`, retries: 1, retryBaseMs: 1 });
    const err = await client.getIndex('sindex').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).errno).toBe('ECONNREFUSED');
    // The server asked is named: a refused connection is most often the wrong base URL.
    expect((err as NetworkError).message).toBe(`network error on GET /indexes/sindex at http://127.0.0.1:${port}/v1 (ECONNREFUSED)`);
    // Only the origin and path: a credential a base URL carries in its query is never named (userinfo is refused at the start).
    const leaky = new IndexClient({ baseUrl: `http://127.0.0.1:${port}/v1?key=q-secret`, retries: 1, retryBaseMs: 1 });
    const named = ((await leaky.getIndex('sindex').catch((e: unknown) => e)) as NetworkError).message;
    expect(named).toBe(`network error on GET /indexes/sindex at http://127.0.0.1:${port}/v1 (ECONNREFUSED)`);
  });

  it('never writes a credential into a log line or an error, through 401s, 500s and refreshes', async () => {
    const canaryKey = demoKey('basic', { name: 'canary', key: 'sk_sandbox_CANARY_KEY_b7c1e9' });
    const s = await testSandbox({ apiKeys: [canaryKey] });
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ format: 'json', level: 'debug', destination: sink });
    const secrets = [canaryKey.key];
    const errors: unknown[] = [];
    try {
      const keyClient = new IndexClient({ baseUrl: s.baseUrl, apiKey: canaryKey.key, logger, retries: 1, retryBaseMs: 1 });
      await control(s, '/faults', { kind: 'status', status: 500, count: 2 });
      errors.push(await keyClient.getIndex('sindex').catch((e: unknown) => e));
      await keyClient.getComposition('sindex');
      await control(s, '/revoke-key', { key: canaryKey.key });
      errors.push(await keyClient.getPortfolio().catch((e: unknown) => e));

      const store = new MemoryTokenStore();
      const keypair = WalletKeypair.generate();
      const walletClient = new IndexClient({ baseUrl: s.baseUrl, keypair, tokenStore: store, logger, retries: 1, retryBaseMs: 1 });
      await walletClient.getPortfolio();
      secrets.push(store.load(s.baseUrl)!.accessToken, store.load(s.baseUrl)!.refreshToken);
      await control(s, '/expire-token', { wallet: keypair.address });
      await walletClient.getPortfolio();
      secrets.push(store.load(s.baseUrl)!.accessToken, store.load(s.baseUrl)!.refreshToken);
      await control(s, '/faults', { kind: 'status', status: 500, count: 2 });
      errors.push(await walletClient.getPortfolio().catch((e: unknown) => e));
      errors.push(await walletClient.refreshTokens('rt_not_real').catch((e: unknown) => e));
    } finally {
      await s.close();
    }
    expect(errors.every((e) => e instanceof Error)).toBe(true);
    const text = [...lines, ...errors.map((e) => `${String(e)} ${JSON.stringify(e)} ${(e as Error).stack}`)].join('\n');
    expect(lines.length).toBeGreaterThan(5);
    for (const secret of secrets) expect(text).not.toContain(secret);
  });
});
