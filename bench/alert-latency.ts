/**
 * Delay from an event's detection to its accepted delivery at a webhook that misbehaves: it
 * fails its first two requests (HTTP 500) and answers every tenth of the rest with
 * `429 Retry-After: 1`. `ALERTS` events (default 150) are detected five a
 * second and go through the outbox with the dispatcher's defaults, over loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AlertDispatcher } from '../src/alerts/index.ts';
import type { NewEvent } from '../src/detect/index.ts';
import { SnapshotStore } from '../src/store/index.ts';

const ALERTS = Number(process.env.ALERTS ?? 150);
const EVERY_MS = 200;

export async function run(): Promise<void> {
  let requests = 0;
  const acceptedAt = new Map<string, number>();
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      if (requests <= 2) return void res.writeHead(500).end();
      if ((requests - 2) % 10 === 0) return void res.writeHead(429, { 'Retry-After': '1' }).end();
      acceptedAt.set(String(req.headers['idempotency-key']), Date.now());
      res.writeHead(200).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const dir = mkdtempSync(join(tmpdir(), 'indexbot-alerts-'));
  const store = SnapshotStore.open(join(dir, 'alerts.db'));
  const dispatcher = new AlertDispatcher({ store, sinks: [{ type: 'webhook', name: 'hook', url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` }] });
  dispatcher.start();
  const detectedAt = new Map<string, number>();
  for (let i = 0; i < ALERTS; i++) {
    const at = Date.now();
    const e = {
      id: `rebalance.announced:bench:rb_${i}`,
      type: 'rebalance.announced',
      indexId: 'bench',
      occurredAt: at,
      detectedAt: at,
      payload: { rebalanceId: `rb_${i}`, announcedAt: at, effectiveAt: at + 3_600_000, changes: [] },
    } as unknown as NewEvent;
    store.appendEvents([e]);
    detectedAt.set(e.id, at);
    dispatcher.notify();
    await new Promise((r) => setTimeout(r, EVERY_MS));
  }
  const deadline = Date.now() + 120_000;
  while (acceptedAt.size < ALERTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  await dispatcher.stop();
  store.close();
  await new Promise((r) => receiver.close(r));
  rmSync(dir, { recursive: true, force: true });
  const delays = [...detectedAt].map(([id, at]) => (acceptedAt.get(id) ?? Number.POSITIVE_INFINITY) - at).sort((a, b) => a - b);
  const q = (p: number) => delays[Math.min(delays.length - 1, Math.ceil(p * delays.length) - 1)]!;
  const s = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : 'never');
  console.log(`alert latency: ${ALERTS} alerts detected ${1000 / EVERY_MS}/s to a webhook failing its first 2 requests and answering every tenth of the rest 429 Retry-After: 1`);
  console.log(`  detection to accepted delivery: p50 ${s(q(0.5))}  p95 ${s(q(0.95))}  max ${s(delays[delays.length - 1]!)}  (${requests} requests for ${acceptedAt.size} accepted)`);
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
