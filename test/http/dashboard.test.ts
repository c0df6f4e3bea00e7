import { existsSync, mkdtempSync } from 'node:fs';
import { type Server, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { type EventRow, readDb, waitFor } from '../helpers/daemon.ts';
import { type HttpDaemon, get, startHttpDaemon } from '../helpers/http-daemon.ts';
import { control, testSandbox } from '../helpers/sandbox.ts';

const CHROMIUM = '/usr/bin/chromium';
const POLL_MS = 1_000;
const PAYLOAD = '<img src=x onerror=alert(1)>';
const SCRIPT_PAYLOAD = '<script>alert(2)</script>';

/**
 * A hostile server: the sandbox behind a proxy that prefixes every token symbol with an HTML
 * payload (and the index names with a script tag).
 */
function hostileProxy(target: string): Promise<{ server: Server; baseUrl: string }> {
  const server = createServer((req, res) => {
    const up = request(`${target}${req.url}`, { method: req.method, headers: { ...req.headers, host: new URL(target).host, 'accept-encoding': 'identity' } }, (upRes) => {
      const chunks: Buffer[] = [];
      upRes.on('data', (c: Buffer) => chunks.push(c));
      upRes.on('end', () => {
        const body = Buffer.concat(chunks)
          .toString('utf8')
          .replace(/"symbol":"/g, `"symbol":"${PAYLOAD}`)
          .replace(/"name":"/g, `"name":"${SCRIPT_PAYLOAD}`);
        const headers = { ...upRes.headers, 'content-length': String(Buffer.byteLength(body)) };
        res.writeHead(upRes.statusCode ?? 502, headers);
        res.end(body);
      });
    });
    req.pipe(up);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` })));
}

let sb: Sandbox;
let proxy: Server;
let d: HttpDaemon;

beforeAll(async () => {
  sb = await testSandbox({ speed: 1, startTime: Date.now(), rateWindowMs: 10_000 });
  const p = await hostileProxy(sb.origin);
  proxy = p.server;
  d = await startHttpDaemon({ ...sb, baseUrl: p.baseUrl } as Sandbox);
  await waitFor('ready', async () => (await get(`${d.url}/readyz`)).status === 200);
}, 60_000);
afterAll(async () => {
  expect(await d.stop()).toBe(0);
  proxy.close();
  sb.close();
});

const events = () => readDb(d.db, (db) => db.prepare('SELECT * FROM events ORDER BY seq').all() as EventRow[]);

describe('the dashboard', () => {
  it('is one self-contained page with a nonce CSP', async () => {
    const res = await get(`${d.url}/`);
    const html = await res.text();
    const csp = res.headers.get('content-security-policy')!;
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)![1];
    expect(csp).toMatch(/^default-src 'none'; script-src 'nonce-[^']+'; style-src 'nonce-[^']+';/);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    // Every script is inline with this response's nonce: nothing loads from elsewhere.
    expect(html.match(/<script[^>]*>/g)).toEqual([`<script nonce="${nonce}">`, `<script nonce="${nonce}">`]);
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|<img|url\(|@import/);
    const again = await get(`${d.url}/`);
    expect(again.headers.get('content-security-policy')).not.toBe(csp);
  });

  it.skipIf(!existsSync(CHROMIUM) && process.env.INDEXBOT_REQUIRE_CHROMIUM !== '1')(
    'in Chromium: no console error, hostile symbols shown as text, an equity chart, a triggered rebalance in the live feed within two polls',
    async () => {
      const { chromium } = await import('playwright-core');
      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      });
      const shots = mkdtempSync(join(tmpdir(), 'indexbot-dashboard-'));
      try {
        // Functions below run in the page, which has a document; this project has no DOM types.
        const page = await browser.newPage({ viewport: { width: 1200, height: 1400 } });
        const errors: string[] = [];
        const dialogs: string[] = [];
        const foreign: string[] = [];
        page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
        page.on('pageerror', (e) => errors.push(e.message));
        page.on('dialog', (dialog) => {
          dialogs.push(dialog.message());
          void dialog.dismiss();
        });
        page.on('request', (r) => !r.url().startsWith(d.url) && foreign.push(r.url()));
        await page.goto(`${d.url}/`);
        await page.waitForSelector('#strategy-rebalance-front-run .chart canvas', { timeout: 20_000 });
        await page.waitForSelector('#feed li', { timeout: 10_000 });
        await page.waitForFunction(() => (globalThis as any).document.getElementById('live').textContent === 'live', undefined, { timeout: 10_000 });
        // A strategy with no fill has one point, valued now: its axis ends there, not an hour into the future (trial 35).
        await page.waitForSelector('#strategy-rebalance-alert .chart canvas', { timeout: 20_000 });
        const scale = await page.evaluate(() => {
          const x = (globalThis as any).indexbotCharts.get('rebalance-alert').scales.x;
          return { min: x.min as number, max: x.max as number, now: Date.now() / 1000 };
        });
        expect(scale.max).toBeLessThanOrEqual(scale.now + 1);
        expect(scale.max - scale.min).toBe(7200);
        // Said in UTC, as every time on the page (trial 35: no zone).
        await page.waitForFunction(() => /^updated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/.test((globalThis as any).document.getElementById('state').textContent), undefined, { timeout: 10_000 });

        const triggered = Date.now();
        const rb = (await control(sb, '/rebalance', { index_id: 'dindex', effective_in_seconds: 600 })).json.data;
        await page.waitForFunction((id: string) => [...(globalThis as any).document.querySelectorAll('#feed li')].some((li: { textContent: string }) => li.textContent.includes(id)), rb.id, {
          timeout: 10_000,
          polling: 50,
        });
        const shownAfter = Date.now() - triggered;
        // Detected within two polls (the daemon test's bound) and streamed at once.
        expect(shownAfter).toBeLessThanOrEqual(2 * POLL_MS + 1_000);
        expect(events().some((e) => e.type === 'rebalance.announced' && e.payload.includes(rb.id))).toBe(true);

        // The hostile strings are text on the page, never markup.
        await page.waitForFunction((p: string) => (globalThis as any).document.body.textContent.includes(p), PAYLOAD, { timeout: 10_000 });
        expect(await page.evaluate(() => (globalThis as any).document.querySelectorAll('img').length)).toBe(0);
        expect(await page.evaluate(() => (globalThis as any).document.querySelectorAll('script').length)).toBe(2);
        const chart = await page.locator('#strategy-rebalance-front-run .chart canvas').first().boundingBox();
        expect(chart!.width).toBeGreaterThan(200);
        expect(chart!.height).toBeGreaterThan(100);
        await page.screenshot({ path: join(shots, 'desktop.png'), fullPage: true });

        await page.setViewportSize({ width: 390, height: 844 });
        await page.reload();
        await page.waitForSelector('#strategy-rebalance-front-run .chart canvas', { timeout: 20_000 });
        expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
        await page.screenshot({ path: join(shots, 'phone.png'), fullPage: true });

        expect(dialogs).toEqual([]);
        expect(errors).toEqual([]);
        expect(foreign).toEqual([]);
        process.stdout.write(`dashboard screenshots in ${shots}\n`);
      } finally {
        await browser.close();
      }
    },
    90_000,
  );
});
