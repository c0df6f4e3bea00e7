import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { type EventRow, readDb, runCli, waitFor } from '../helpers/daemon.ts';
import { type HttpDaemon, get, post, startHttpDaemon } from '../helpers/http-daemon.ts';
import { parsePrometheusText, sampleValue } from '../helpers/prom-text.ts';
import { control, testSandbox } from '../helpers/sandbox.ts';

let sb: Sandbox;
/** The endpoint templates a daemon polls, sorted. */
const POLLED = ['GET /indexes', 'GET /indexes/{index_id}/composition', 'GET /indexes/{index_id}/performance', 'GET /indexes/{index_id}/rebalancing', 'GET /tokens'];
let d: HttpDaemon;

beforeAll(async () => {
  sb = await testSandbox({ speed: 1, startTime: Date.now(), rateWindowMs: 10_000 });
  d = await startHttpDaemon(sb);
  await waitFor('ready', async () => (await get(`${d.url}/readyz`)).status === 200);
  // The sandbox starts with an announced rebalance: the first event.
  await waitFor('the first event', () => events().length > 0);
}, 60_000);
afterAll(async () => {
  expect(await d.stop()).toBe(0);
  sb.close();
});

const json = async (path: string) => {
  const res = await get(`${d.url}${path}`);
  expect(res.status, path).toBe(200);
  return (await res.json()) as any;
};
const events = () => readDb(d.db, (db) => db.prepare('SELECT * FROM events ORDER BY seq').all() as EventRow[]);
const announcedFor = (id: string) => events().find((e) => e.type === 'rebalance.announced' && JSON.parse(e.payload).rebalanceId === id);
const metrics = async () => parsePrometheusText(await (await get(`${d.url}/metrics`)).text());
const waitAsync = async (what: string, probe: () => Promise<boolean>, timeoutMs = 15_000) => {
  const end = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

describe('the HTTP face of indexbot run --http, against the sandbox', () => {
  it('answers health and readiness, with security headers and no CORS', async () => {
    const health = await get(`${d.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });
    expect(health.headers.get('x-content-type-options')).toBe('nosniff');
    expect(health.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
    expect(health.headers.get('access-control-allow-origin')).toBeNull();
    const ready = await json('/readyz');
    expect(ready).toMatchObject({ ready: true, storeWritable: true, maxAgeS: 300 });
    expect(ready.lastSuccessfulPollAgeS).toBeLessThanOrEqual(30);
    // Where it answers, for `status` to name in its advice.
    const face = readDb(d.db, (db) => db.prepare("SELECT value FROM runtime WHERE key = 'httpFace'").get() as { value: string });
    expect(JSON.parse(face.value)).toEqual({ pid: expect.any(Number), url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+/), token: false, readyMaxAgeS: 300 });
    expect(d.url.startsWith(JSON.parse(face.value).url.replace(/\/$/, ''))).toBe(true);
  });

  it('serves status, indexes, events, strategies, equity and the outbox from what the daemon stored', async () => {
    const stored = events().at(-1)!.seq;
    const status = await json('/api/v1/status');
    expect(status.lastEventSeq).toBeGreaterThanOrEqual(stored);
    expect(status.jobs.map((j: { job: string }) => j.job)).toEqual(expect.arrayContaining(['rebalancing:dindex', 'composition:mindex']));
    expect(status.rateGates[0]).toMatchObject({ limit: expect.any(Number), windowMs: 10_000 });
    expect(status.paused).toEqual([]);

    const { indexes } = await json('/api/v1/indexes');
    expect(indexes.map((i: { indexId: string }) => i.indexId)).toEqual(['dindex', 'mindex']);
    expect(indexes[0].top).toHaveLength(5);
    // Polled every second; loose for a loaded machine.
    expect(indexes[0].lastPollAgeS).toBeLessThanOrEqual(30);

    const all = await json('/api/v1/events?since=0&limit=500');
    const rows = events();
    expect(all.events.map((e: { seq: number }) => e.seq)).toEqual(rows.filter((r) => r.seq <= all.next).map((r) => r.seq));
    const first = await json('/api/v1/events?since=0&limit=1');
    expect(first.events).toHaveLength(1);
    const after = await json(`/api/v1/events?since=${first.next}&limit=500`);
    expect(after.events[0]?.seq ?? Number.POSITIVE_INFINITY).toBeGreaterThan(first.next);
    const { type, index_id } = rows[0]!;
    const filtered = await json(`/api/v1/events?type=${type}&index=${index_id}`);
    expect(filtered.events.map((e: { seq: number }) => e.seq)).toEqual(
      events()
        .filter((r) => r.type === type && r.index_id === index_id && r.seq <= filtered.next)
        .map((r) => r.seq),
    );
    expect(filtered.events.length).toBeGreaterThan(0);
    for (const [q, msg] of [
      ['type=nope', /^type: expected one of/],
      ['since=-1', /^since: expected a whole number/],
      ['limit=501', /^limit: expected a whole number from 1 to 500/],
      ['index=%3Cx%3E', /^index: expected an index id/],
    ] as const) {
      const res = await get(`${d.url}/api/v1/events?${q}`);
      expect(res.status, q).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(msg);
    }

    const { strategies } = await json('/api/v1/strategies');
    expect(strategies.map((s: { strategy: string }) => s.strategy).sort()).toEqual(['drift-reversion', 'rebalance-alert', 'rebalance-front-run']);
    const frontRun = strategies.find((s: { strategy: string }) => s.strategy === 'rebalance-front-run');
    expect(frontRun).toMatchObject({ paused: false, parked: [], initialCash: 10_000 });
    expect(frontRun.recentFills.length).toBe(Math.min(20, frontRun.fills));

    const equity = await json('/api/v1/strategies/rebalance-front-run/equity');
    expect(equity.points.length).toBeGreaterThan(0);
    expect(equity.points.every((p: { t: number; equity: number }) => Number.isFinite(p.equity) && p.equity > 0)).toBe(true);
    expect((await get(`${d.url}/api/v1/strategies/nope/equity`)).status).toBe(404);

    expect(await json('/api/v1/alerts/outbox')).toEqual({ sinks: [] });
    expect((await get(`${d.url}/api/v1/nothing`)).status).toBe(404);
    const wrongMethod = await get(`${d.url}/api/v1/strategies/rebalance-alert/pause`);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
  });

  it('/metrics parses strictly, and a rebalance triggered in the sandbox moves events_total{type="rebalance.announced"} by one', async () => {
    const before = await metrics();
    // Each strategy run has its fills series from the start, at 0 until its first fill.
    const fillSeries = before.get('indexbot_strategy_fills_total')!.samples.map((s) => `${s.labels.strategy} ${s.labels.side}`);
    for (const { strategy } of (await json('/api/v1/strategies')).strategies) expect(fillSeries).toEqual(expect.arrayContaining([`${strategy} buy`, `${strategy} sell`]));
    // And each endpoint polled has its 429s and retries series, whether or not any came.
    for (const name of ['indexbot_api_rate_limited_total', 'indexbot_api_retries_total']) {
      expect(
        before
          .get(name)!
          .samples.map((s) => s.labels.endpoint)
          .sort(),
        name,
      ).toEqual(POLLED);
    }
    const announcedBefore = sampleValue(before, 'indexbot_events_total', { type: 'rebalance.announced' });
    const rb = (await control(sb, '/rebalance', { index_id: 'dindex', effective_in_seconds: 600 })).json.data;
    await waitFor('the announcement', () => announcedFor(rb.id));
    const after = await metrics();
    expect(sampleValue(after, 'indexbot_events_total', { type: 'rebalance.announced' }) - announcedBefore).toBe(1);

    expect(after.get('indexbot_events_total')!.type).toBe('counter');
    expect(after.get('indexbot_event_detection_delay_seconds')!.type).toBe('histogram');
    // Endpoint labels are templates: no index id leaks into a label value.
    const endpoints = new Set(after.get('indexbot_api_requests_total')!.samples.map((s) => s.labels.endpoint));
    expect([...endpoints].sort()).toEqual(POLLED);
    expect(sampleValue(after, 'indexbot_api_requests_total', { endpoint: 'GET /indexes/{index_id}/rebalancing', status: '200' })).toBeGreaterThan(2);
    expect(sampleValue(after, 'indexbot_polls_total', { outcome: 'ok' })).toBeGreaterThan(4);
    expect(sampleValue(after, 'indexbot_rate_gate_limit')).toBeGreaterThan(0);
    expect(sampleValue(after, 'indexbot_poll_last_success_age_seconds', { job: 'rebalancing:dindex' })).toBeLessThan(30);
    expect(sampleValue(after, 'indexbot_db_size_bytes')).toBeGreaterThan(4096);
    expect(sampleValue(after, 'indexbot_event_log_last_seq')).toBeGreaterThanOrEqual(announcedFor(rb.id)!.seq);
    expect(sampleValue(after, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    const { strategies } = await json('/api/v1/strategies');
    const frontRun = strategies.find((s: { strategy: string }) => s.strategy === 'rebalance-front-run');
    await waitAsync('the fills in the metrics', async () => {
      const m = await metrics();
      const fills =
        sampleValue(m, 'indexbot_strategy_fills_total', { strategy: 'rebalance-front-run', side: 'buy' }) +
        sampleValue(m, 'indexbot_strategy_fills_total', { strategy: 'rebalance-front-run', side: 'sell' });
      return fills === readDb(d.db, (db) => (db.prepare("SELECT COUNT(*) AS n FROM paper_fills WHERE account = 'strategy:rebalance-front-run'").get() as { n: number }).n);
    });
    expect(sampleValue(after, 'indexbot_strategy_cash_usd', { strategy: 'rebalance-front-run' })).toBeCloseTo(frontRun.cash, 6);
    for (const f of after.values()) expect(f.name).toMatch(/^(indexbot_|process_|nodejs_)/);
    // The Grafana dashboard asks only for metrics the daemon exports; those of a shared budget or the event stream, a process with Redis exports (their names as metrics.ts registers them).
    const grafana = readFileSync('deploy/grafana-dashboard.json', 'utf8');
    const used = new Set([...grafana.matchAll(/\b((?:indexbot|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, '')));
    expect(used.size).toBeGreaterThan(15);
    const withRedis = new Set([...readFileSync('src/http/metrics.ts', 'utf8').matchAll(/'(indexbot_(?:shared_budget|event_stream)_[a-z_]+)'/g)].map((m) => m[1]!));
    for (const name of used) expect(after.has(name) || withRedis.has(name), name).toBe(true);
  });

  it('streams new events over SSE, and what was missed after Last-Event-ID', async () => {
    const last = events().at(-1)!.seq;
    const res = await get(`${d.url}/api/v1/stream`, undefined, { 'Last-Event-ID': String(last - 1) });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const rb = (await control(sb, '/rebalance', { index_id: 'mindex', effective_in_seconds: 600 })).json.data;
    const end = Date.now() + 15_000;
    while (!text.includes(rb.id) && Date.now() < end) text += decoder.decode((await reader.read()).value, { stream: true });
    await reader.cancel();
    expect(text).toContain(`id: ${last}\nevent: event\n`);
    const announced = announcedFor(rb.id)!;
    expect(text).toContain(`id: ${announced.seq}\nevent: event\ndata: `);
    const block = text.split('\n\n').find((b) => b.startsWith(`id: ${announced.seq}\n`))!;
    expect(JSON.parse(block.split('data: ')[1]!)).toMatchObject({ id: announced.id, type: 'rebalance.announced', indexId: 'mindex' });
  });

  it('pause holds a strategy’s events; resume delivers each of them once', async () => {
    const cursor = () => readDb(d.db, (db) => (db.prepare("SELECT seq FROM cursors WHERE consumer = 'strategy:rebalance-alert'").get() as { seq: number }).seq);
    const alertsFor = (id: string) =>
      readDb(d.db, (db) => db.prepare("SELECT event_id FROM strategy_alerts WHERE strategy = 'rebalance-alert'").all() as { event_id: string }[]).filter((a) => a.event_id.includes(id));
    const paused = await post(`${d.url}/api/v1/strategies/rebalance-alert/pause`);
    expect(await paused.json()).toEqual({ strategy: 'rebalance-alert', paused: true, changed: true });
    const held = cursor();
    const ids: string[] = [];
    for (const index of ['dindex', 'mindex']) ids.push((await control(sb, '/rebalance', { index_id: index, effective_in_seconds: 600 })).json.data.id);
    await waitFor('both announcements', () => ids.every((id) => announcedFor(id)));
    const frontRunCursor = () => readDb(d.db, (db) => (db.prepare("SELECT seq FROM cursors WHERE consumer = 'strategy:rebalance-front-run'").get() as { seq: number }).seq);
    await waitFor('the other strategies to move on', () => frontRunCursor() >= announcedFor(ids[1]!)!.seq);
    expect(cursor()).toBe(held);
    expect(ids.flatMap(alertsFor)).toEqual([]);
    expect((await json('/api/v1/strategies')).strategies.find((s: { strategy: string }) => s.strategy === 'rebalance-alert').paused).toBe(true);
    expect(sampleValue(await metrics(), 'indexbot_strategy_paused', { strategy: 'rebalance-alert' })).toBe(1);
    // status, from its own process, says so too.
    expect((await runCli(['status', '--db', d.db])).stdout).toMatch(/\n {2}rebalance-alert .*fills \d+ {2}alerts \d+ {2}PAUSED\n/);
    const statusJson = JSON.parse((await runCli(['status', '--db', d.db, '--json'])).stdout) as { strategies: { strategy: string; paused: boolean }[] };
    expect(statusJson.strategies.map((s) => [s.strategy, s.paused]).filter(([, p]) => p)).toEqual([['rebalance-alert', true]]);

    const resumed = await post(`${d.url}/api/v1/strategies/rebalance-alert/resume`);
    expect(await resumed.json()).toEqual({ strategy: 'rebalance-alert', paused: false, changed: true });
    await waitFor('the held events delivered', () => cursor() >= announcedFor(ids[1]!)!.seq);
    await new Promise((r) => setTimeout(r, 1_500));
    for (const id of ids) expect(alertsFor(id)).toEqual([{ event_id: announcedFor(id)!.id }]);
    expect((await post(`${d.url}/api/v1/strategies/nope/pause`)).status).toBe(404);
    const retry = await post(`${d.url}/api/v1/strategies/rebalance-alert/retry`);
    expect(await retry.json()).toEqual({ strategy: 'rebalance-alert', delivered: 0, stillParked: 0 });
    expect(await (await post(`${d.url}/api/v1/alerts/test`)).json()).toEqual({ sinks: [] });
  });

  it('control routes refuse cross-site requests, other content types and foreign Host names', async () => {
    const url = `${d.url}/api/v1/strategies/rebalance-alert/pause`;
    for (const headers of [{ Origin: 'http://evil.example' }, { 'Sec-Fetch-Site': 'cross-site' }, { 'Sec-Fetch-Site': 'same-site' }] as Record<string, string>[]) {
      const res = await post(url, undefined, headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(((await res.json()) as { error: string }).error).toBe('cross-site requests are refused');
    }
    const plain = await fetch(url, { method: 'POST', body: 'x', headers: { 'Content-Type': 'text/plain' } });
    expect(plain.status).toBe(415);
    // A DNS-rebinding page reaches us under its own name.
    const rebound = await new Promise<string>((resolve) => {
      const s = connect(Number(new URL(d.url).port), '127.0.0.1', () => s.write('GET /api/v1/status HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n'));
      let out = '';
      s.on('data', (c) => (out += c.toString()));
      s.on('end', () => resolve(out));
    });
    expect(rebound).toMatch(/^HTTP\/1\.1 403/);
    expect((await json('/api/v1/strategies')).strategies.find((s: { strategy: string }) => s.strategy === 'rebalance-alert').paused).toBe(false);
  });

  it('keeps polling on time with a thousand idle connections and SSE clients that never read', async () => {
    const port = Number(new URL(d.url).port);
    const sockets = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => {
        return new Promise<ReturnType<typeof connect>>((resolve, reject) => {
          const s = connect(port, '127.0.0.1', () => {
            // A tenth ask for the stream and then never read; the rest say nothing at all.
            if (i % 10 === 0) s.write(`GET /api/v1/stream?since=0 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
            resolve(s);
          });
          s.on('error', reject);
          s.pause();
        });
      }),
    );
    try {
      const before = await metrics();
      const count = (m: typeof before, le: string) => sampleValue(m, 'indexbot_poll_lateness_seconds_bucket', { le });
      // Events keep flowing to the clients that do not read, so their buffers fill.
      for (let i = 0; i < 3; i++) await control(sb, '/rebalance', { index_id: 'dindex', effective_in_seconds: 600 });
      await new Promise((r) => setTimeout(r, 5_000));
      const after = await metrics();
      const polls = count(after, '+Inf') - count(before, '+Inf');
      // Two indexes with rebalancing and composition every second: about 20 polls in 5 s.
      // Bounds loose enough for a shared machine, tight enough to catch a server that blocks
      // the loop (polls seconds late, or skipped); bench/http.ts measures it properly.
      expect(polls).toBeGreaterThanOrEqual(12);
      expect(count(after, '0.5') - count(before, '0.5')).toBeGreaterThanOrEqual(0.9 * polls);
      expect(count(after, '2.5') - count(before, '2.5')).toBe(polls);
      expect((await get(`${d.url}/healthz`)).status).toBe(200);
    } finally {
      for (const s of sockets) s.destroy();
    }
  }, 30_000);
});
