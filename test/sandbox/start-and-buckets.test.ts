import { createServer, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WalletKeypair } from '../../src/auth/index.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { control, raw, testSandbox } from '../helpers/sandbox.ts';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Connects in a tight loop until the port opens, then sends one request at once; resolves with the first bytes of the answer. */
function firstAnswer(port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const attempt = () => {
      const socket = connect(port, '127.0.0.1');
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error('the port never opened'));
        else setImmediate(attempt);
      });
      socket.once('connect', () => {
        const timer = setTimeout(() => {
          socket.destroy();
          reject(new Error(`no answer within ${timeoutMs} ms to a request sent the moment the port opened`));
        }, timeoutMs);
        socket.once('data', (d: Buffer) => {
          clearTimeout(timer);
          socket.destroy();
          resolve(d.toString('utf8'));
        });
        socket.write('GET /v1/tokens?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      });
    };
    attempt();
  });
}

describe('sandbox start', () => {
  it('answers a request sent the moment its port opens (while the signing key is still being generated)', async () => {
    const port = await freePort();
    const starting = startSandbox({ port, speed: 0, seed: 7 });
    try {
      const answer = await firstAnswer(port, 5_000);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      await (await starting).close();
    }
  });
});

const post = (s: Sandbox, path: string, body: unknown) => raw(`${s.baseUrl}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

describe('rate buckets of a credential that fails authentication', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await testSandbox({ rateWindowMs: 600_000 });
  });
  afterAll(() => sb.close());

  it('an unknown API key is counted in a bucket of its own, not the anonymous one', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await raw(`${sb.baseUrl}/tokens`, { headers: { Authorization: 'Bearer sk_not_a_key' } });
      expect(res.status).toBe(401);
    }
    const anonymous = await raw(`${sb.baseUrl}/tokens?limit=1`);
    expect(anonymous.status).toBe(200);
    // Public burst is 100: the anonymous caller's first request leaves 99, whatever the bad key did.
    expect(anonymous.headers['x-ratelimit-remaining']).toBe('99');
    const byRoute = (await control(sb, '/counters')).json.data.byRoute['GET /tokens'];
    const buckets = Object.keys(byRoute);
    expect(buckets.filter((b) => b.startsWith('invalid:'))).toHaveLength(1);
    expect(byRoute[buckets.find((b) => b.startsWith('invalid:'))!]).toBe(5);
    expect(buckets.join(' ')).not.toContain('sk_not_a_key');
  });

  it('the control route refuses a clock speed past MAX_SPEED (the server would spin catching up)', async () => {
    const res = await control(sb, '/clock', { speed: 1e15 });
    expect(res.status).toBe(400);
    expect(res.json.error.details).toEqual([{ param: 'speed', issue: 'must be a number from 0 to 100000' }]);
  });

  it('a revoked key and a revoked access token keep the limit and the bucket they had', async () => {
    const key = sb.keys.basic;
    const withKey = () => raw(`${sb.baseUrl}/tokens?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
    const before = await withKey();
    expect(before.status).toBe(200);
    await control(sb, '/revoke-key', { key });
    const after = await withKey();
    expect(after.status).toBe(401);
    expect(after.headers['x-ratelimit-limit']).toBe(before.headers['x-ratelimit-limit']);
    expect(Number(after.headers['x-ratelimit-remaining'])).toBe(Number(before.headers['x-ratelimit-remaining']) - 1);

    const wallet = WalletKeypair.generate();
    const challenge = (await post(sb, '/auth/challenge', { wallet: wallet.address })).json.data;
    const pair = (await post(sb, '/auth/wallet', { wallet: wallet.address, message: challenge.message, signature: wallet.signMessage(challenge.message) })).json.data;
    const withToken = () => raw(`${sb.baseUrl}/tokens?limit=1`, { headers: { Authorization: `Bearer ${pair.access_token}` } });
    const valid = await withToken();
    expect(valid.status).toBe(200);
    expect(valid.headers['x-ratelimit-limit']).toBe('120');
    // Reusing a refresh token revokes its family, this access token included.
    await post(sb, '/auth/refresh', { refresh_token: pair.refresh_token });
    await post(sb, '/auth/refresh', { refresh_token: pair.refresh_token });
    const revoked = await withToken();
    expect(revoked.status).toBe(401);
    expect(revoked.headers['x-ratelimit-limit']).toBe('120');
    expect(Number(revoked.headers['x-ratelimit-remaining'])).toBe(Number(valid.headers['x-ratelimit-remaining']) - 1);
  });
});

describe('reading a rate bucket (what bench/shared-gate.ts measures utilization against)', () => {
  it('gives the tokens refilled to now without taking one, never above the burst, and what it let through and refused', async () => {
    let now = Date.now();
    const s = await testSandbox({ rateWindowMs: 1_000, realNow: () => now });
    try {
      expect(s.rateBucket('ip:127.0.0.1')).toBeUndefined();
      // The public tier: a burst of 100, then 60 per (scaled) window.
      for (let i = 0; i < 102; i++) await raw(`${s.baseUrl}/tokens`);
      expect(s.rateBucket('ip:127.0.0.1')).toEqual({ tokens: 0, allowed: 100, refused: 2 });
      now += 500;
      expect(s.rateBucket('ip:127.0.0.1')).toEqual({ tokens: 30, allowed: 100, refused: 2 });
      expect(s.rateBucket('ip:127.0.0.1')?.tokens).toBe(30);
      expect((await raw(`${s.baseUrl}/tokens`)).status).toBe(200);
      expect(s.rateBucket('ip:127.0.0.1')).toEqual({ tokens: 29, allowed: 101, refused: 2 });
      now += 10_000;
      expect(s.rateBucket('ip:127.0.0.1')?.tokens).toBe(100);
    } finally {
      await s.close();
    }
  });
});
