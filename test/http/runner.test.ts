import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_STREAM } from '../../src/stream/index.ts';
import { type DaemonProcess, sandboxConfig, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { get } from '../helpers/http-daemon.ts';
import { parsePrometheusText, sampleValue } from '../helpers/prom-text.ts';
import { type TestRedis, startRedis } from '../helpers/redis.ts';
import { publishEvents } from '../helpers/event-stream.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

let redis: TestRedis;
let admin: Redis;
let runner: DaemonProcess;
let url: string;

/** What a collector publishes: the event, by its seq. */
const publish = (n: number, type = 'rebalance.announced') => publishEvents(admin, n, n, type);

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
  await publish(1);
  await publish(2);
  const db = tempDbPath();
  // The runner talks to no API server: an address where nothing listens.
  const config = sandboxConfig({ baseUrl: 'http://127.0.0.1:1/v1' }, db, { strategies: { dir: 'test/fixtures/strategies/counting' } });
  runner = spawnDaemon(['--config', config, '--role', 'strategies', '--group', 'watched', '--http', '127.0.0.1:0'], { INDEXBOT_EVENTS_URL: redis.url });
  url = await waitFor('the http face', () => /"url":"(http:[^"]+)"[^\n]*http face listening/.exec(runner.output())?.[1], 30_000).catch((e) =>
    Promise.reject(new Error(`${e.message}: ${runner.output().slice(-1500)}`)),
  );
}, 60_000);
afterAll(async () => {
  runner?.child.kill('SIGTERM');
  expect(await runner?.exited).toBe(0);
  admin?.disconnect();
  await redis?.stop();
});

const json = async (path: string) => {
  const res = await get(`${url}${path}`);
  return { status: res.status, body: (await res.json()) as any };
};

describe('a strategies runner with --http (real redis-server)', () => {
  it('is ready on its event-stream reads, serves its status, books and stream metrics, and streams the events it is fed', async () => {
    // Ready: a runner polls nothing, so its heartbeat is its last answered read of the stream.
    await waitFor('ready', async () => (await get(`${url}/readyz`)).status === 200, 20_000);
    const ready = (await json('/readyz')).body;
    expect(ready).toMatchObject({ ready: true, storeWritable: true });
    expect(ready.lastStreamReadAgeS).toBeLessThanOrEqual(ready.maxAgeS);
    expect(ready).not.toHaveProperty('lastSuccessfulPollAgeS');

    await waitFor('both events counted', async () => (await json('/api/v1/status')).body.strategies.find((s: any) => s.strategy === 'counting')?.cursor === 2, 20_000);
    const status = (await json('/api/v1/status')).body;
    expect(status.eventStream).toMatchObject({ stream: EVENT_STREAM, group: 'watched' });
    expect(status.rateGates).toEqual([]);
    expect(status.lastEventSeq).toBe(2);

    const metrics = parsePrometheusText(await (await get(`${url}/metrics`)).text());
    expect(sampleValue(metrics, 'indexbot_event_log_last_seq')).toBe(2);
    expect(sampleValue(metrics, 'indexbot_event_stream_last_read_age_seconds')).toBeLessThan(60);
    expect(sampleValue(metrics, 'indexbot_event_stream_pending')).toBe(0);
    expect(sampleValue(metrics, 'indexbot_strategy_paused', { strategy: 'counting' })).toBe(0);
    // It polls and detects nothing: no poll, API or detection series, which an alert on "polls stopped" would read as a stalled bot.
    const pollerFamilies = [...metrics.keys()].filter((name) => /^indexbot_(polls?_|api_|rate_gate_|shared_budget_|events_total|event_detection_)/.test(name));
    expect(pollerFamilies).toEqual([]);

    // An event published now reaches the server-sent event stream.
    const res = await get(`${url}/api/v1/stream`);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    await publish(3, 'rebalance.completed');
    let text = '';
    const end = Date.now() + 15_000;
    while (!text.includes('rebalance.completed:sindex:rb_3') && Date.now() < end) text += decoder.decode((await reader.read()).value, { stream: true });
    await reader.cancel();
    expect(text).toContain('rebalance.completed:sindex:rb_3');
  }, 60_000);

  it('replays every event after Last-Event-ID, however many were missed, then goes on live with none twice; a malformed one is refused', async () => {
    const before = (await json('/api/v1/status')).body.lastEventSeq as number;
    // More than one page of the log (500) missed while the client was away.
    await publishEvents(admin, before + 1, before + 600);
    const top = before + 600;
    await waitFor('the runner to store them', async () => (await json('/api/v1/status')).body.lastEventSeq === top, 60_000);

    const res = await get(`${url}/api/v1/stream`, undefined, { 'Last-Event-ID': '0' });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const end = Date.now() + 30_000;
    while (!text.includes(`id: ${top}\n`) && Date.now() < end) text += decoder.decode((await reader.read()).value, { stream: true });
    await publish(top + 1, 'rebalance.completed');
    while (!text.includes(`id: ${top + 1}\n`) && Date.now() < end) text += decoder.decode((await reader.read()).value, { stream: true });
    await reader.cancel();
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual(Array.from({ length: top + 1 }, (_, i) => i + 1));

    for (const bad of ['abc', '-1', '1.5', '']) {
      const refused = await get(`${url}/api/v1/stream`, undefined, { 'Last-Event-ID': bad });
      expect(refused.status, bad).toBe(400);
      expect(((await refused.json()) as { error: string }).error).toBe(`Last-Event-ID: expected a whole number (the seq of the last event received), got ${JSON.stringify(bad)}`);
    }
  }, 120_000);

  it.skipIf(!existsSync('/usr/bin/chromium') && process.env.INDEXBOT_REQUIRE_CHROMIUM !== '1')(
    'its dashboard in Chromium shows its event stream where a daemon shows its rate budget, and no console error',
    async () => {
      const { chromium } = await import('playwright-core');
      const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
      try {
        const page = await browser.newPage();
        const errors: string[] = [];
        page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
        page.on('pageerror', (e) => errors.push(e.message));
        await page.goto(`${url}/`);
        // Functions below run in the page, which has a document; this project has no DOM types.
        await page.waitForFunction(() => (globalThis as any).document.getElementById('budget-title').textContent === 'Event stream', undefined, { timeout: 15_000 });
        const text = await page.evaluate(() => (globalThis as any).document.getElementById('budget').textContent as string);
        expect(text).toContain(EVENT_STREAM);
        expect(text).toContain('watched');
        expect(errors).toEqual([]);
      } finally {
        await browser.close();
      }
    },
    60_000,
  );
});
