import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/api/index.ts';
import { backfill } from '../../src/poller/index.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { utcAxisMismatches } from '../helpers/chart-axes.ts';
import { runCli as cli, readDb, sandboxConfig } from '../helpers/daemon.ts';
import { FIXED_TIME, testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const H = 3_600_000;
const FROM = '2026-09-01';
const TO = '2026-11-20';
const CHROMIUM = '/usr/bin/chromium';

describe('backfill, then backtest, against the sandbox (seed 7)', () => {
  let sandbox: Sandbox;
  let db: string;
  let env: Record<string, string>;
  let out: string;

  beforeAll(async () => {
    sandbox = await testSandbox();
    db = tempDbPath();
    out = mkdtempSync(join(tmpdir(), 'indexbot-bt-'));
    env = { INDEXBOT_API_KEY: sandbox.keys.premium, INDEXBOT_CONFIG: sandboxConfig(sandbox, db, {}) };
  });
  afterAll(async () => sandbox.close());

  it('backfills through the CLI, and a second run fetches nothing it holds', async () => {
    const first = await cli(['backfill', '--from', FROM, '--to', TO, '--indexes', 'mindex'], env);
    expect(first.stderr).not.toContain('indexbot:');
    expect(first.status).toBe(0);
    expect(first.stdout).toMatch(/mindex +\+1921 points, \+\d+ rebalancing records; holds 2026-09-01T00:00:00.000Z \.\. 2026-11-20T00:00:00.000Z of this range; no gaps/);
    const before = sandbox.counters().total;
    const second = await cli(['backfill', '--from', FROM, '--to', TO, '--indexes', 'mindex'], env);
    expect(second.stdout).toContain('mindex       already cached');
    // Only the index list (to check the name) was asked for.
    expect(sandbox.counters().total - before).toBe(1);
  });

  it('resumes an interrupted backfill after its last stored page', async () => {
    const path = tempDbPath();
    const store = SnapshotStore.open(path);
    const client = new IndexClient({ baseUrl: sandbox.baseUrl, apiKey: sandbox.keys.premium, tier: 'premium', windowMs: 10_000, pageSize: 100 });
    const abort = new AbortController();
    const range = { client, store, indexes: ['sindex'], from: Date.parse('2026-10-01T00:00:00Z'), to: FIXED_TIME, clock: { now: () => FIXED_TIME, setTimeout, clearTimeout } as never };
    const interrupted = await backfill({ ...range, signal: abort.signal, onProgress: (p) => p.pagesDone === 3 && abort.abort(new Error('stop')) }).catch((e: Error) => e);
    expect((interrupted as Error).message).toBe('stop');
    const held = store.history.timestamps('sindex', '1h', range.from, range.to).length;
    expect(held).toBe(300);
    const resumed = await backfill(range);
    // 1211 points in all (50 days and 10 hours), 300 held: 10 more pages of history, and the rebalancing list.
    expect(resumed.indexes[0]!.points).toBe(1211 - 300);
    expect(resumed.indexes[0]!.gaps).toEqual([]);
    expect(resumed.pages).toBe(10 + 1);
    store.close();
  });

  it('backtests rebalance-front-run: buys at each announcement, sells a holding period after effective_at, same bytes twice', async () => {
    const args = ['backtest', '--strategy', 'rebalance-front-run', '--from', FROM, '--to', TO, '--indexes', 'mindex', '--out', join(out, 'a'), '--json'];
    const run = await cli(args, env);
    expect(run.stderr).not.toContain('indexbot:');
    expect(run.status).toBe(0);
    const report = JSON.parse(run.stdout);
    const rebalances = readDb(
      db,
      (d) => d.prepare("SELECT id, announced_at, effective_at FROM rebalances WHERE index_id = 'mindex'").all() as { id: string; announced_at: number; effective_at: number }[],
    );
    const byId = new Map(rebalances.map((r) => [r.id, r]));
    const buys = report.fills.list.filter((f: { side: string }) => f.side === 'buy');
    const sells = report.fills.list.filter((f: { side: string }) => f.side === 'sell');
    expect(buys.length).toBeGreaterThan(10);
    expect(sells.length).toBeGreaterThan(10);
    for (const b of buys) {
      const [, , id] = b.eventId.split(':');
      // Bought on the announcement, at the moment it became public (the hour of announced_at).
      expect(b.eventId).toMatch(/^rebalance\.announced:mindex:/);
      expect(Date.parse(b.at)).toBe(Math.ceil(byId.get(id)!.announced_at / H) * H);
    }
    for (const s of sells) {
      const sellable = buys.filter((b: { instrument: string; eventId: string }) => b.instrument === s.instrument && byId.get(b.eventId.split(':')[2]!)!.effective_at + 24 * H <= Date.parse(s.at));
      expect(sellable.length).toBeGreaterThan(0);
    }
    expect(report.events.detected['rebalance.announced']).toBeGreaterThan(10);
    expect(report.benchmarks.map((b: { indexId: string }) => b.indexId)).toEqual(['mindex']);
    // Each traded token reads as its symbol, in report.json and in the page's trade list.
    const symbols = new Map(readDb(db, (d) => d.prepare('SELECT address, symbol FROM token_ids').all() as { address: string; symbol: string }[]).map((t) => [`token:${t.address}`, t.symbol]));
    const traded = [...new Set(report.fills.list.map((f: { instrument: string }) => f.instrument))] as string[];
    expect(Object.keys(report.labels).sort()).toEqual(expect.arrayContaining(traded.sort()));
    for (const key of traded) expect(report.labels[key]).toBe(symbols.get(key));
    const page = readFileSync(join(out, 'a', 'report.html'), 'utf8');
    expect(page).toContain(`<td>${report.labels[traded[0]!]}</td>`);
    expect(page).not.toContain(`<td>${traded[0]}</td>`);
    const again = await cli([...args.slice(0, -3), '--out', join(out, 'b'), '--json'], env);
    expect(readFileSync(join(out, 'b', 'report.json'), 'utf8')).toBe(readFileSync(join(out, 'a', 'report.json'), 'utf8'));
    expect(JSON.parse(again.stdout).fills.hash).toBe(report.fills.hash);
  });

  it('a strategy whose handler fails: the report warns of it (JSON, page), and the command exits 1 unless --allow-failures', async () => {
    const args = ['backtest', '--strategy', 'test/fixtures/strategies/mixed/always-throws.ts', '--from', '2026-11-15', '--to', TO, '--indexes', 'mindex'];
    const failing = await cli([...args, '--out', join(out, 'throws')], env);
    expect(failing.status).toBe(1);
    // Besides the JSON log lines (each failure logged), one line for the user.
    expect(failing.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('{'))).toEqual([
      expect.stringMatching(
        // With the file and line that threw (it was only in the JSON lines and report.json).
        /^indexbot: the run: strategy handlers failed on \d+ event\(s\), which were skipped \(.*strategy bug, at test\/fixtures\/strategies\/mixed\/always-throws\.ts:(9|12):\d+\); fix the strategy, or pass --allow-failures to accept the figures \[BACKTEST_STRATEGY_FAILED\]$/,
      ),
    ]);
    const report = JSON.parse(readFileSync(join(out, 'throws', 'report.json'), 'utf8'));
    expect(report.events.parked.count).toBeGreaterThan(0);
    const warning = report.warnings.find((w: string) => w.includes('failed in the strategy and were skipped'));
    expect(warning).toMatch(/^\d+ event\(s\) failed in the strategy and were skipped: the figures miss what its handlers would have done \(first: .*strategy bug\)$/);
    expect(readFileSync(join(out, 'throws', 'report.html'), 'utf8')).toContain(`⚠ ${warning}`);
    // Pretty lines (a terminal's) come before the line that ends the command: from pino's transport thread they came after it.
    const pretty = await cli([...args, '--out', join(out, 'throws-pretty'), '--log-format', 'pretty'], env);
    const prettyLines = pretty.stderr.trim().split('\n');
    expect(prettyLines.filter((l) => l.includes('strategy handler failed')).length).toBeGreaterThan(0);
    expect(prettyLines.at(-1)).toMatch(/^indexbot: the run: strategy handlers failed on \d+ event\(s\).*\[BACKTEST_STRATEGY_FAILED\]$/);
    const allowed = await cli([...args, '--out', join(out, 'throws-allowed'), '--allow-failures', '--json'], env);
    expect(allowed.status).toBe(0);
    expect(JSON.parse(allowed.stdout).warnings).toContain(warning);
  });

  it("a sweep counts its runs' info lines (a strategy's alerts) instead of writing each, as walk-forward does (found by trial 25: 216 lines for 6 runs)", async () => {
    const sweep = (extra: string[]) =>
      cli(['backtest', '--strategy', 'rebalance-alert', '--from', FROM, '--to', TO, '--indexes', 'mindex', '--params', '{"minChange":0}', '--params', '{"minChange":0.01}', ...extra], env);
    const quiet = await sweep(['--out', join(out, 'quiet-sweep')]);
    expect(quiet.status, quiet.stderr).toBe(0);
    expect(quiet.stderr).not.toMatch(/"msg":"alert: /);
    // Progress every 5 s and at the end, not a line per run (trial 26): this one takes less.
    expect(quiet.stderr.match(/"msg":"sweep: \d+ of 2 runs done"/g)).toEqual(['"msg":"sweep: 2 of 2 runs done"']);
    const said = /"lines":(\d+),"msg":"backtest: the runs logged \d+ info lines, not shown; --log-level debug shows them"/.exec(quiet.stderr);
    expect(Number(said?.[1])).toBeGreaterThan(2);
    // Each run's alerts are in its report all the same.
    const summary = JSON.parse(readFileSync(join(out, 'quiet-sweep', 'sweep.json'), 'utf8'));
    const report = JSON.parse(readFileSync(join(out, 'quiet-sweep', summary.runs[0].runId, 'report.json'), 'utf8'));
    expect(report.alerts.count).toBeGreaterThan(0);
    const loud = await sweep(['--out', join(out, 'loud-sweep'), '--log-level', 'debug']);
    expect(loud.stderr.match(/"msg":"alert: /g)?.length).toBe(Number(said?.[1]));
  });

  it('runs a sweep in one process and prints one comparison table', async () => {
    const startedAt = Date.now();
    const r = await cli(
      ['backtest', '--strategy', 'rebalance-front-run', '--from', FROM, '--to', TO, '--indexes', 'mindex', '--params', '{"holdHours":12}', '--params', '{"holdHours":48}', '--out', join(out, 'sweep')],
      env,
    );
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split('\n');
    // A window under 90 days: CAGR and Sharpe marked, as in a single run's table.
    expect(lines[0]).toMatch(/^run +params +return +CAGR \(!\) +Sharpe \(!\) +max DD +fills +sales +win rate +failed events +fills hash$/);
    // Only the swept params, in the table and on the page: every param of every run made both too wide to read (found by a trial).
    expect(lines[1]).toMatch(/ \{"holdHours":12\} /);
    expect(lines[2]).toMatch(/ \{"holdHours":48\} /);
    const page = readFileSync(join(out, 'sweep', 'sweep.html'), 'utf8');
    expect(page).toContain('<td data-v="{&#34;holdHours&#34;:12}">{&#34;holdHours&#34;:12}</td>');
    expect(page).toMatch(/<p id="fixed-params">The same in every run: <code>\{&#34;notionalUsd&#34;:500,&#34;minIncrease&#34;:0.005,&#34;maxTokens&#34;:3\}<\/code><\/p>/);
    const sweep = JSON.parse(readFileSync(join(out, 'sweep', 'sweep.json'), 'utf8'));
    // What the sweep ran, to reproduce it or compare it later: strategy, shared settings, the swept params, version, time.
    const first = JSON.parse(readFileSync(join(out, 'sweep', sweep.runs[0].runId, 'report.json'), 'utf8'));
    expect(sweep.format).toBe('indexbot-sweep/1');
    expect(sweep.strategy).toEqual({ name: 'rebalance-front-run', file: first.strategy.file, sourceHash: first.strategy.sourceHash });
    expect(sweep.strategy.file).toMatch(/rebalance-front-run\.ts$/);
    expect(sweep.settings).toEqual(first.settings);
    expect(sweep.settings).toMatchObject({ indexes: ['mindex'], from: `${FROM}T00:00:00.000Z`, interval: '1h', cash: expect.any(Number), feeBps: expect.any(Number), slippageBps: expect.any(Number) });
    expect(sweep.swept).toEqual({ holdHours: [12, 48] });
    expect(sweep.indexbotVersion).toBe(JSON.parse(readFileSync('package.json', 'utf8')).version);
    expect(Date.parse(sweep.createdAt)).toBeGreaterThanOrEqual(startedAt);
    expect(Date.parse(sweep.createdAt)).toBeLessThanOrEqual(Date.now());
    expect(sweep.runs).toHaveLength(2);
    expect(sweep.runs[0].fillsHash).not.toBe(sweep.runs[1].fillsHash);
    // Fills and sales are told apart (win rate counts sales), and no event failed.
    for (const row of sweep.runs) {
      const report = JSON.parse(readFileSync(join(out, 'sweep', row.runId, 'report.json'), 'utf8'));
      expect([row.fills, row.closedTrades, row.failedEvents]).toEqual([report.fills.count, report.metrics.closedTrades, 0]);
      expect(row.closedTrades).toBeLessThan(row.fills);
    }
  });

  const needChromium = process.env.INDEXBOT_REQUIRE_CHROMIUM === '1';
  it.skipIf(!existsSync(CHROMIUM) && !needChromium)('the HTML report opens in headless Chromium: no console errors, legend colours are the series colours, one marker per fill', async () => {
    const report = JSON.parse(readFileSync(join(out, 'a', 'report.json'), 'utf8'));
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      // A zone far from UTC: the axes must still read as the tables do, in UTC (trial 30).
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 }, timezoneId: 'America/New_York' });
      const errors: string[] = [];
      const requests: string[] = [];
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('request', (r) => !r.url().startsWith('file:') && requests.push(r.url()));
      await page.goto(`file://${join(out, 'a', 'report.html')}`);
      for (const id of ['equity-chart', 'drawdown-chart', 'exposure-chart']) {
        const box = await page.locator(`#${id} canvas`).first().boundingBox();
        expect(box, id).not.toBeNull();
        expect(box!.width).toBeGreaterThan(600);
      }
      // The legend swatch of each series has the colour its line is drawn with.
      // Run in the page (the test compiles without the DOM types, so it is given as source).
      const legend: { label: string; expected: string; swatch: string }[][] = await page.evaluate(`window.indexbotCharts.map((u) =>
        u.series.slice(1).map((s, i) => {
          const marker = u.root.querySelectorAll('.u-legend .u-series')[i + 1].querySelector('.u-marker');
          const probe = document.createElement('span');
          probe.style.color = s._stroke ?? s.stroke(u, i + 1);
          document.body.appendChild(probe);
          const expected = getComputedStyle(probe).color;
          probe.remove();
          return { label: s.label, expected, swatch: getComputedStyle(marker).borderTopColor };
        }))`);
      expect(legend[0]!.map((l) => l.label)).toEqual(['rebalance-front-run', 'hold mindex']);
      expect(await page.evaluate(`window.indexbotCharts[0].axes[0]._values.length`)).toBeGreaterThan(2);
      expect(await page.evaluate(utcAxisMismatches('window.indexbotCharts[0]'))).toEqual([]);
      for (const l of legend.flat()) expect(l.swatch, l.label).toBe(l.expected);
      expect(new Set(legend[0]!.map((l) => l.swatch)).size).toBe(2);
      expect(await page.locator('#equity-chart .trade-marker').count()).toBe(report.fills.count);
      expect(await page.locator('#equity-chart .trade-marker.buy').count()).toBe(report.fills.list.filter((f: { side: string }) => f.side === 'buy').length);
      expect(await page.locator('table.trades tbody tr').count()).toBe(report.fills.count);
      expect(await page.locator('#metrics').textContent()).toContain('profit factor');
      expect(await page.locator('#monthly tbody tr').count()).toBeGreaterThan(0);
      // Hovering the equity chart shows a tooltip with the date and each series' value.
      const over = (await page.locator('#equity-chart .u-over').boundingBox())!;
      await page.mouse.move(over.x + over.width / 2, over.y + over.height / 2);
      await expect.poll(() => page.locator('#tooltip').textContent()).toMatch(/UTC\nrebalance-front-run: [\d,]+\nhold mindex: [\d,]+/);
      await page.screenshot({ path: join(out, 'report.png'), fullPage: true });
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
