import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { runCli, sandboxConfig } from '../helpers/daemon.ts';
import { type HttpDaemon, get, post, startHttpDaemon } from '../helpers/http-daemon.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const TOKEN = 'a-long-enough-test-token-0123456789';
let sb: Sandbox;
let d: HttpDaemon;

beforeAll(async () => {
  sb = await testSandbox({ speed: 1, startTime: Date.now(), rateWindowMs: 10_000 });
  // Off loopback (every address), with the token from the environment.
  d = await startHttpDaemon(sb, { http: { token: 'env:BOT_HTTP_TOKEN' } }, { BOT_HTTP_TOKEN: TOKEN }, '0.0.0.0:0');
}, 60_000);
afterAll(async () => {
  expect(await d.stop()).toBe(0);
  sb.close();
});

describe('the HTTP face with a token', () => {
  it('refuses to listen off loopback without a token, naming what to set (exit 78)', async () => {
    const db = tempDbPath();
    const r = await runCli(['run', '--config', sandboxConfig(sb, db, {}), '--http', '0.0.0.0:0'], { INDEXBOT_API_KEY: sb.keys.premium });
    expect(r.status).toBe(78);
    expect(r.stderr).toMatch(/^indexbot: http address 0\.0\.0\.0:0 is not loopback: set http\.token in .*indexbot\.json \(or bind 127\.0\.0\.1\)/m);
    const short = await runCli(['run', '--config', sandboxConfig(sb, db, { http: { token: 'short' } }), '--http', '0.0.0.0:0'], { INDEXBOT_API_KEY: sb.keys.premium });
    expect(short.status).toBe(78);
    expect(short.stderr).toMatch(/http\.token: expected at least 16 characters, got 5/);
    expect(short.stderr).not.toContain('short');
  }, 120_000);

  it('requires the token on every route but /healthz; a wrong one is 401', async () => {
    const url = d.url.replace('0.0.0.0', '127.0.0.1');
    expect((await get(`${url}/healthz`)).status).toBe(200);
    for (const path of ['/readyz', '/metrics', '/api/v1/status', '/api/v1/events', '/api/v1/strategies', '/api/v1/stream']) {
      for (const token of [undefined, 'wrong', TOKEN.slice(0, -1), `${TOKEN}x`, TOKEN.toUpperCase()]) {
        const res = await get(`${url}${path}`, token);
        expect(res.status, `${path} with ${token}`).toBe(401);
        // None is asked for; a wrong one is said to be wrong (it was answered as if none was sent).
        expect(res.headers.get('www-authenticate')).toBe(token === undefined ? 'Bearer realm="indexbot"' : 'Bearer realm="indexbot", error="invalid_token"');
        expect(((await res.json()) as { error: string }).error).toBe(token === undefined ? 'a bearer token is required' : 'the bearer token is not the one configured (http.token)');
      }
      const ok = await get(`${url}${path}`, TOKEN);
      expect(ok.status, path).toBe(200);
      await ok.body?.cancel();
    }
    expect((await post(`${url}/api/v1/strategies/rebalance-alert/pause`)).status).toBe(401);
    expect((await post(`${url}/api/v1/strategies/rebalance-alert/pause`, 'wrong')).status).toBe(401);
    const paused = await post(`${url}/api/v1/strategies/rebalance-alert/pause`, TOKEN);
    expect(await paused.json()).toMatchObject({ paused: true, changed: true });
    // The token holder is still refused from another site's page.
    expect((await post(`${url}/api/v1/strategies/rebalance-alert/resume`, TOKEN, { Origin: 'http://evil.example' })).status).toBe(403);
    // The page itself holds no data, so a browser can load it and then ask for the token.
    const page = await get(`${url}/`);
    expect(page.status).toBe(200);
    expect(d.daemon.output()).not.toContain(TOKEN);
  });

  it('answers HEAD as GET, without a body: an uptime check by HEAD sees the page, and the token still guards the rest (trial 30)', async () => {
    const url = d.url.replace('0.0.0.0', '127.0.0.1');
    const head = (path: string, token?: string) => fetch(`${url}${path}`, { method: 'HEAD', headers: token ? { Authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(5_000) });
    const page = await head('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toBe('');
    expect((await head('/healthz')).status).toBe(200);
    for (const path of ['/readyz', '/metrics', '/api/v1/status', '/api/v1/stream']) {
      expect((await head(path)).status, path).toBe(401);
      const ok = await head(path, TOKEN);
      expect(ok.status, path).toBe(200);
      // The stream's headers, then the end: no connection held open for a body HEAD never gets.
      expect(await ok.text(), path).toBe('');
      if (path === '/api/v1/stream') expect(ok.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    }
    const post = await head('/api/v1/strategies/rebalance-alert/pause', TOKEN);
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('POST');
    const wrongMethod = await fetch(`${url}/api/v1/status`, { method: 'DELETE', headers: { Authorization: `Bearer ${TOKEN}` } });
    expect([wrongMethod.status, wrongMethod.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
  });

  it.skipIf(!existsSync('/usr/bin/chromium') && process.env.INDEXBOT_REQUIRE_CHROMIUM !== '1')(
    'the dashboard asks for the token, keeps it in sessionStorage and sends it as a header, never in a URL',
    async () => {
      const url = d.url.replace('0.0.0.0', '127.0.0.1');
      const { chromium } = await import('playwright-core');
      const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
      try {
        const page = await browser.newPage();
        const urls: string[] = [];
        const authorized: string[] = [];
        page.on('request', (r) => {
          urls.push(r.url());
          if (r.headers().authorization === `Bearer ${TOKEN}`) authorized.push(new URL(r.url()).pathname);
        });
        await page.goto(`${url}/`);
        await page.waitForSelector('#login:not([hidden])', { timeout: 10_000 });
        await page.fill('#token', TOKEN);
        await page.click('#login button[type=submit]');
        await page.waitForSelector('#strategy-rebalance-front-run .chart canvas', { timeout: 20_000 });
        await page.waitForFunction(() => (globalThis as any).document.getElementById('live').textContent === 'live', undefined, { timeout: 10_000 });
        expect(await page.evaluate(() => (globalThis as any).sessionStorage.getItem('indexbot-token'))).toBe(TOKEN);
        expect(authorized).toEqual(expect.arrayContaining(['/api/v1/status', '/api/v1/strategies', '/api/v1/stream']));
        expect(urls.filter((u) => u.includes(TOKEN))).toEqual([]);
      } finally {
        await browser.close();
      }
    },
    60_000,
  );
});
