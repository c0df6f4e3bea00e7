import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { runCli, waitFor } from '../helpers/daemon.ts';
import { type HttpDaemon, get, startHttpDaemon } from '../helpers/http-daemon.ts';
import { parsePrometheusText, sampleValue } from '../helpers/prom-text.ts';
import { type TestRedis, startRedis } from '../helpers/redis.ts';
import { testSandbox } from '../helpers/sandbox.ts';

let sb: Sandbox;
let redis: TestRedis;
let d: HttpDaemon;

beforeAll(async () => {
  sb = await testSandbox({ speed: 1, startTime: Date.now(), rateWindowMs: 10_000 });
  redis = await startRedis();
  d = await startHttpDaemon(sb, { rateLimit: { redis: redis.url } });
}, 60_000);
afterAll(async () => {
  expect(await d?.stop()).toBe(0);
  await redis?.stop();
  await sb?.close();
});

const metrics = async () => parsePrometheusText(await (await get(`${d.url}/metrics`)).text());
const eventually = async (what: string, probe: () => Promise<boolean>) => {
  const end = Date.now() + 20_000;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

describe('the shared budget in /metrics and status (real redis-server)', () => {
  it('exports limit, burst, remaining, processes and fallback per gate, labelled by a hash of the key, and follows Redis going away and back', async () => {
    await eventually('the shared budget in the metrics', async () => sampleValue(await metrics(), 'indexbot_shared_budget_processes') === 1);
    const m = await metrics();
    const samples = m.get('indexbot_shared_budget_limit')!.samples;
    expect(samples).toHaveLength(1);
    const gate = samples[0]!.labels.gate!;
    expect(gate).toMatch(/^key:[0-9a-f]+$/);
    expect(gate).not.toContain(sb.keys.premium);
    expect(sampleValue(m, 'indexbot_shared_budget_limit', { gate })).toBe(sampleValue(m, 'indexbot_rate_gate_limit', { gate }));
    const remaining = sampleValue(m, 'indexbot_shared_budget_remaining', { gate });
    expect(remaining).toBeGreaterThanOrEqual(0);
    expect(remaining).toBeLessThanOrEqual(sampleValue(m, 'indexbot_shared_budget_burst', { gate }));
    expect(sampleValue(m, 'indexbot_shared_budget_fallback', { gate })).toBe(0);
    for (const f of m.values()) for (const s of f.samples) for (const v of Object.values(s.labels)) expect(v).not.toContain(sb.keys.premium);

    // status, from its own process, shows the same budget and the process drawing on it.
    await waitFor(
      'status to list the process',
      async () => /shared budget \(Redis\): limit \d+.*1 process in the last minute: [^:\s]+:\d+:[0-9a-f]+/.test((await runCli(['status', '--db', d.db])).stdout),
      20_000,
      500,
    );
    // The JSON is polled the same way: the daemon reports its gates a moment after it starts.
    let json = '';
    await waitFor(
      'status --json to list the gate',
      async () => {
        json = (await runCli(['status', '--db', d.db, '--json'])).stdout;
        return (JSON.parse(json) as { rateGates: unknown[] }).rateGates.length === 1;
      },
      20_000,
      500,
    ).catch(() => expect.fail(`status --json never listed the gate: ${json}`));
    const status = JSON.parse(json) as { rateGates: { shared?: unknown }[] };
    expect(status.rateGates[0]!.shared).toMatchObject({ mode: 'shared', processes: [expect.stringMatching(/:\d+:/)] });

    await redis.kill();
    await eventually('the fallback in the metrics', async () => sampleValue(await metrics(), 'indexbot_shared_budget_fallback', { gate }) === 1);
    const away = await metrics();
    expect(sampleValue(away, 'indexbot_shared_budget_local_share', { gate })).toBe(2);
    // No figure for what Redis holds while it does not answer (the limit and burst stay: they are the budget's, as last told).
    expect(away.get('indexbot_shared_budget_remaining')?.samples ?? []).toEqual([]);
    expect(away.get('indexbot_shared_budget_limit')?.samples).toHaveLength(1);
    await redis.restart();
    await eventually('the shared budget back', async () => sampleValue(await metrics(), 'indexbot_shared_budget_fallback', { gate }) === 0);
  }, 120_000);
});
