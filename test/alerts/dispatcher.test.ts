import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { AlertDispatcher, HttpSender, type SinkConfig, alertConsumer } from '../../src/alerts/index.ts';
import { type Logger, ManualClock, silentLogger } from '../../src/core/index.ts';
import type { NewEvent } from '../../src/detect/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { StrategyRuntime, loadStrategies } from '../../src/strategy/index.ts';
import { waitFor } from '../helpers/daemon.ts';
import { captureLogger } from '../helpers/fake-transport.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const T0 = Date.UTC(2026, 10, 20);
const SECRET = 'whsec_canary_4f1d9a7be2c84c1b';

function announced(indexId: string, id: string, delta = 0.05): NewEvent {
  return {
    id: `rebalance.announced:${indexId}:${id}`,
    type: 'rebalance.announced',
    indexId,
    occurredAt: T0,
    detectedAt: T0,
    payload: {
      rebalanceId: id,
      announcedAt: T0,
      effectiveAt: T0 + 86_400_000,
      reason: 'scheduled',
      changes: [
        { address: 'A'.repeat(44), symbol: 'JUP', action: 'add', oldWeight: 0, newWeight: delta },
        { address: 'B'.repeat(44), symbol: 'BONK', action: 'decrease', oldWeight: 0.2, newWeight: 0.2 - delta },
      ],
    },
  };
}

const drift: NewEvent = {
  id: 'composition.drift:x:a:t',
  type: 'composition.drift',
  indexId: 'x',
  occurredAt: T0,
  detectedAt: T0,
  payload: { address: 'a', symbol: 'A', weight: 0.3, target: 0.2, deviation: 0.1, threshold: 0.02 },
};

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function setup(sinks: (url: string) => SinkConfig[], answer?: Parameters<typeof startReceiver>[0]) {
  const receiver = await startReceiver(answer);
  const store = SnapshotStore.open(tempDbPath());
  const clock = new ManualClock(T0);
  const dispatcher = new AlertDispatcher({ store, sinks: sinks(receiver.url), clock, sender: new HttpSender(2_000, () => {}), retryBaseMs: 1_000, giveUpAfterMs: 3_600_000 });
  cleanups.push(
    () => store.close(),
    () => receiver.close(),
  );
  return { receiver, store, clock, dispatcher };
}

describe('alert sinks against a local receiver', () => {
  it('posts each sink its own payload, with the event id as idempotency key and a verifiable signature', async () => {
    const { receiver, store, dispatcher } = await setup((url) => [
      { type: 'webhook', name: 'hook', url: `${url}/hook`, secret: SECRET },
      { type: 'slack', name: 'slack', url: `${url}/services/T000/B000/XXXX` },
      { type: 'discord', name: 'discord', url: `${url}/api/webhooks/1/abc` },
      { type: 'telegram', name: 'tg', botToken: '123456:ABC-canary', chatId: -100, baseUrl: url },
    ]);
    store.appendEvents([announced('sindex', 'rb_1')]);
    await dispatcher.runOnce();
    const by = (p: string) => receiver.requests.find((r) => r.path.startsWith(p))!;
    const text = 'sindex: rebalance rb_1 announced, effective 2026-11-21 00:00 UTC: added +JUP 5.00%; reweighted BONK 20.00% -> 15.00%';
    const hook = by('/hook');
    expect(hook.headers['idempotency-key']).toBe('rebalance.announced:sindex:rb_1');
    expect(hook.headers['x-indexbot-signature']).toBe(`sha256=${createHmac('sha256', SECRET).update(hook.body).digest('hex')}`);
    expect(JSON.parse(hook.body)).toMatchObject({ id: 'rebalance.announced:sindex:rb_1', type: 'rebalance.announced', indexId: 'sindex', text, event: { payload: { rebalanceId: 'rb_1' } } });
    expect(JSON.parse(by('/services/').body)).toEqual({ text: text.replace('->', '-&gt;') });
    expect(JSON.parse(by('/api/webhooks/').body)).toEqual({ content: text.replace('rb_1', 'rb\\_1').replace('->', '-\\>'), allowed_mentions: { parse: [] } });
    const tg = by('/bot123456:ABC-canary/sendMessage');
    expect(JSON.parse(tg.body)).toMatchObject({ chat_id: -100, text });
    expect(store.outbox.summary().map((s) => [s.sink, s.delivered, s.pending])).toEqual([
      ['discord', 1, 0],
      ['hook', 1, 0],
      ['slack', 1, 0],
      ['tg', 1, 0],
    ]);
    // Recorded: a second round sends nothing.
    await dispatcher.runOnce();
    expect(receiver.requests).toHaveLength(4);
  });

  it('a 500 then a success gives exactly one recorded delivery, both tries with the same key', async () => {
    const { receiver, store, clock, dispatcher } = await setup(
      (url) => [{ type: 'webhook', name: 'hook', url }],
      (_r, n) => ({ status: n === 1 ? 500 : 200 }),
    );
    store.appendEvents([announced('x', 'rb_1')]);
    await dispatcher.runOnce();
    expect(store.outbox.summary()[0]).toMatchObject({ pending: 1, delivered: 0, lastError: 'HTTP 500' });
    await dispatcher.runOnce();
    expect(receiver.requests).toHaveLength(1);
    await clock.advance(1_000);
    await dispatcher.runOnce();
    expect(receiver.requests.map((r) => r.headers['idempotency-key'])).toEqual(['rebalance.announced:x:rb_1', 'rebalance.announced:x:rb_1']);
    // The sink answers again: the failure it got over is no longer its last error (dashboard, status).
    expect(store.outbox.summary()[0]).toEqual(expect.objectContaining({ pending: 0, delivered: 1, lastError: null }));
  });

  it('sends in order: while the oldest alert backs off, newer ones wait behind it', async () => {
    const { receiver, store, clock, dispatcher } = await setup(
      (url) => [{ type: 'webhook', name: 'hook', url }],
      (_r, n) => ({ status: n <= 2 ? 503 : 200 }),
    );
    store.appendEvents([announced('x', 'rb_1')]);
    await dispatcher.runOnce();
    store.appendEvents([announced('x', 'rb_2'), announced('x', 'rb_3')]);
    await dispatcher.runOnce();
    expect(receiver.requests).toHaveLength(1);
    await clock.advance(1_000);
    await dispatcher.runOnce();
    await clock.advance(2_000);
    await dispatcher.runOnce();
    expect(receiver.requests.map((r) => r.headers['idempotency-key'])).toEqual([
      'rebalance.announced:x:rb_1',
      'rebalance.announced:x:rb_1',
      'rebalance.announced:x:rb_1',
      'rebalance.announced:x:rb_2',
      'rebalance.announced:x:rb_3',
    ]);
    expect(store.outbox.nextDue('hook')).toBeUndefined();
  });

  it('honours Retry-After on a 429, and gives up after the configured age with the reason kept', async () => {
    const { receiver, store, clock, dispatcher } = await setup(
      (url) => [{ type: 'slack', name: 'slack', url }],
      () => ({ status: 429, headers: { 'Retry-After': '30' } }),
    );
    store.appendEvents([announced('x', 'rb_1')]);
    await dispatcher.runOnce();
    await clock.advance(29_000);
    await dispatcher.runOnce();
    expect(receiver.requests).toHaveLength(1);
    await clock.advance(1_000);
    await dispatcher.runOnce();
    expect(receiver.requests).toHaveLength(2);
    await clock.advance(3_600_000);
    await dispatcher.runOnce();
    expect(store.outbox.summary()[0]).toMatchObject({ pending: 0, givenUp: 1 });
    expect(store.outbox.summary()[0]!.lastGiveUpError).toMatch(/^still failing after 61 min: HTTP 429$/);
  });

  it('honours a Retry-After only up to maxRetryAfterMs (60 s): a 429 asking for a year does not stall the queue', async () => {
    const { receiver, store, clock, dispatcher } = await setup(
      (url) => [{ type: 'slack', name: 'slack', url }],
      (_r, n) => (n === 1 ? { status: 429, headers: { 'Retry-After': String(365 * 86_400) } } : { status: 200 }),
    );
    store.appendEvents([announced('x', 'rb_1')]);
    await dispatcher.runOnce();
    await clock.advance(59_999);
    await dispatcher.runOnce();
    expect(receiver.requests).toHaveLength(1);
    await clock.advance(1);
    await dispatcher.runOnce();
    expect(store.outbox.summary()[0]).toMatchObject({ delivered: 1, pending: 0 });
  });

  it('takes a Retry-After as the wait, not a floor under a grown backoff, and starts the backoff afresh once the sink answers', async () => {
    const script = [500, 500, 429, 200, 500, 200];
    const { receiver, store, clock, dispatcher } = await setup(
      (url) => [{ type: 'slack', name: 'slack', url }],
      (_r, n) => ({ status: script[n - 1] ?? 200, headers: script[n - 1] === 429 ? { 'Retry-After': '1' } : undefined }),
    );
    store.appendEvents([announced('x', 'rb_1')]);
    const sentAt: number[] = [];
    for (let i = 0; i < 12 && receiver.requests.length < script.length; i++) {
      const before = receiver.requests.length;
      await dispatcher.runOnce();
      if (receiver.requests.length > before) sentAt.push(clock.now() - T0);
      if (receiver.requests.length === 4) store.appendEvents([announced('x', 'rb_2')]);
      await clock.advance(500);
    }
    // 500 (retry in 1 s), 500 (2 s), 429 Retry-After 1 (1 s, not 4), 200; then the next alert's 500 waits the base 1 s again.
    expect(sentAt).toEqual([0, 1_000, 3_000, 4_000, 4_500, 5_500]);
    expect(store.outbox.summary()[0]).toMatchObject({ delivered: 2, pending: 0 });
  });

  it('gives up on schedule, also while the next attempt is far off', async () => {
    const { receiver, store, clock } = await setup(
      (url) => [{ type: 'slack', name: 'slack', url }],
      () => ({ status: 500 }),
    );
    const dispatcher = new AlertDispatcher({
      store,
      sinks: [{ type: 'slack', name: 'slack', url: receiver.url }],
      clock,
      sender: new HttpSender(2_000, () => {}),
      retryBaseMs: 40 * 60_000,
      maxRetryMs: 50 * 60_000,
      giveUpAfterMs: 60 * 60_000,
    });
    store.appendEvents([announced('x', 'rb_1')]);
    await dispatcher.runOnce();
    await clock.advance(40 * 60_000);
    await dispatcher.runOnce();
    expect(receiver.requests).toHaveLength(2);
    // The next backoff (50 min) would end past the give-up age (60 min): given up at 60 min, with no third send.
    await clock.advance(20 * 60_000);
    await dispatcher.runOnce();
    expect(store.outbox.summary()[0]).toMatchObject({ pending: 0, givenUp: 1, lastError: null, lastGiveUpError: 'still failing after 60 min: HTTP 500' });
    expect(receiver.requests).toHaveLength(2);
  });

  it('goes on doubling its backoff after a restart, from the attempts its head alert had (trial 35: 1 s again after a kill)', async () => {
    const sinks = (url: string): SinkConfig[] => [{ type: 'webhook', name: 'hook', url: `${url}/hook` }];
    const { receiver, store, clock, dispatcher } = await setup(sinks, () => ({ status: 500 }));
    store.appendEvents([announced('x', 'rb_1')]);
    for (const wait of [0, 1_000, 2_000, 4_000]) {
      await clock.advance(wait);
      await dispatcher.runOnce();
    }
    const head = () => store.outbox.pending('hook', 1)[0]!;
    expect([head().attempts, head().nextAttemptAt - clock.now()]).toEqual([4, 8_000]);
    // Restarted: a new dispatcher, its memory empty, on the same store.
    const restarted = new AlertDispatcher({ store, sinks: sinks(receiver.url), clock, sender: new HttpSender(2_000, () => {}), retryBaseMs: 1_000, giveUpAfterMs: 3_600_000 });
    await clock.advance(8_000);
    await restarted.runOnce();
    expect([head().attempts, head().nextAttemptAt - clock.now()]).toEqual([5, 16_000]);
  });

  it("keeps a give-up's reason apart from a later retried failure's (trial 35: GAVE UP 2: HTTP 500, given up for a 400)", () => {
    const store = SnapshotStore.open(tempDbPath());
    store.outbox.enqueue('ops', 'e1', 1, 1);
    store.outbox.enqueue('ops', 'e2', 2, 2);
    store.outbox.givenUp('ops', 'e1', 10, 'refused: HTTP 400');
    store.outbox.retryAt('ops', 'e2', 30, 'HTTP 500');
    expect(store.outbox.summary()[0]).toMatchObject({ pending: 1, givenUp: 1, lastError: 'HTTP 500', lastGiveUpError: 'refused: HTTP 400' });
    store.close();
  });

  it('says why an alert behind a failing one was given up untried, and for how long, in seconds under a minute (trial 28)', async () => {
    const { receiver, store, clock } = await setup(
      (url) => [{ type: 'slack', name: 'slack', url }],
      () => ({ status: 500 }),
    );
    const { logger, lines } = captureLogger();
    const dispatcher = new AlertDispatcher({ store, sinks: [{ type: 'slack', name: 'slack', url: receiver.url }], clock, logger, sender: new HttpSender(2_000, () => {}), giveUpAfterMs: 7_200 });
    store.appendEvents([announced('x', 'rb_1'), announced('x', 'rb_2')]);
    await dispatcher.runOnce();
    await clock.advance(7_200);
    await dispatcher.runOnce();
    expect(receiver.requests).toHaveLength(1);
    const givenUp = lines.map((l) => JSON.parse(l) as { msg: string; alert: string; attempts: number; reason: string }).filter((l) => l.msg === 'alert given up');
    expect(givenUp.map((l) => [l.alert, l.attempts, l.reason])).toEqual([
      ['rebalance.announced:x:rb_1', 1, 'still failing after 7 s: HTTP 500'],
      ['rebalance.announced:x:rb_2', 0, 'never tried in the 7 s since it was queued: an earlier alert to this sink held the line, or no process was running'],
    ]);
  });

  it('does not lose news that arrives while a round is sending: the next round starts at once, not after the idle wait', async () => {
    const store = SnapshotStore.open(tempDbPath());
    const sent: string[] = [];
    let release!: () => void;
    const sender = {
      async send(_sink: SinkConfig, alert: { id: string }) {
        sent.push(alert.id);
        if (sent.length === 1) await new Promise<void>((r) => (release = r));
        return { ok: true as const };
      },
    };
    const dispatcher = new AlertDispatcher({ store, sinks: [{ type: 'console', name: 'c' }], sender, idleMs: 60_000 });
    cleanups.push(
      () => dispatcher.stop(),
      () => store.close(),
    );
    dispatcher.start();
    store.appendEvents([announced('x', 'rb_1')]);
    dispatcher.notify();
    await waitFor('the first send', () => sent.length === 1, 5_000, 5);
    store.appendEvents([announced('x', 'rb_2')]);
    dispatcher.notify();
    release();
    await waitFor('the second alert, well before the 60 s idle wait', () => store.outbox.summary()[0]?.delivered === 2, 5_000, 5);
  });

  it('filters on event types, indexes and the smallest weight change', async () => {
    const { receiver, store, dispatcher } = await setup((url) => [
      { type: 'webhook', name: 'big', url: `${url}/big`, filter: { minWeightChange: 0.04 } },
      { type: 'webhook', name: 'sindex', url: `${url}/sindex`, filter: { indexes: ['sindex'], types: ['rebalance.announced', 'composition.drift'] } },
    ]);
    store.appendEvents([announced('sindex', 'small', 0.01), announced('mindex', 'large', 0.05), drift]);
    await dispatcher.runOnce();
    const got = (p: string) => receiver.requests.filter((r) => r.path === p).map((r) => r.headers['idempotency-key']);
    expect(got('/big')).toEqual(['rebalance.announced:mindex:large']);
    expect(got('/sindex')).toEqual(['rebalance.announced:sindex:small']);
  });

  it("delivers a strategy's ctx.alert after the event it answered, filtered by strategy and index", async () => {
    const { receiver, store, dispatcher } = await setup((url) => [
      { type: 'webhook', name: 'all', url: `${url}/all`, secret: SECRET },
      { type: 'slack', name: 'events-only', url: `${url}/events-only`, filter: { strategyAlerts: false } },
      { type: 'webhook', name: 'others', url: `${url}/others`, filter: { strategyAlerts: ['someone-else'] } },
      { type: 'webhook', name: 'mindex', url: `${url}/mindex`, filter: { indexes: ['mindex'], strategyAlerts: ['alerting'] } },
    ]);
    store.appendEvents([announced('sindex', 'rb_1'), announced('mindex', 'rb_2')]);
    const strategies = await loadStrategies('test/fixtures/strategies/alerting', { logger: silentLogger });
    await new StrategyRuntime({ store, strategies }).drain();
    await dispatcher.runOnce();
    await dispatcher.runOnce();
    const got = (p: string) => receiver.requests.filter((r) => r.path === p).map((r) => r.headers['idempotency-key']);
    // Keyed by the database too: another runner's alert 1 is another alert.
    const db = store.databaseId();
    expect(db).toMatch(/^[0-9a-f]{8}$/);
    expect(got('/all')).toEqual(['rebalance.announced:sindex:rb_1', `strategy.alert:alerting:${db}:1`, 'rebalance.announced:mindex:rb_2', `strategy.alert:alerting:${db}:2`]);
    expect(got('/events-only')).toEqual(['rebalance.announced:sindex:rb_1', 'rebalance.announced:mindex:rb_2']);
    expect(got('/others')).toEqual(['rebalance.announced:sindex:rb_1', 'rebalance.announced:mindex:rb_2']);
    expect(got('/mindex')).toEqual(['rebalance.announced:mindex:rb_2', `strategy.alert:alerting:${db}:2`]);
    const hook = receiver.requests.find((r) => r.path === '/all' && r.headers['idempotency-key'] === `strategy.alert:alerting:${db}:1`)!;
    expect(hook.headers['x-indexbot-signature']).toBe(`sha256=${createHmac('sha256', SECRET).update(hook.body).digest('hex')}`);
    expect(JSON.parse(hook.body)).toEqual({
      id: `strategy.alert:alerting:${db}:1`,
      type: 'strategy.alert',
      strategy: 'alerting',
      indexId: 'sindex',
      occurredAt: expect.any(String),
      eventId: 'rebalance.announced:sindex:rb_1',
      message: 'would buy ahead of rb_1',
      data: { rebalanceId: 'rb_1', notionalUsd: 500 },
      text: 'alerting: would buy ahead of rb_1',
    });
    expect(store.outbox.summary().find((x) => x.sink === 'all')).toMatchObject({ delivered: 4, pending: 0 });
  });

  it('sends a queued strategy alert under the key it was queued with (one queued before the key took the database in)', async () => {
    const { receiver, store, dispatcher } = await setup((url) => [{ type: 'webhook', name: 'hook', url: `${url}/hook` }]);
    store.appendEvents([announced('sindex', 'rb_1')]);
    const strategies = await loadStrategies('test/fixtures/strategies/alerting', { logger: silentLogger });
    await new StrategyRuntime({ store, strategies }).drain();
    const [alert] = store.strategies.alertsAfter(0, 10);
    store.transaction(() => {
      store.outbox.enqueue('hook', 'strategy.alert:alerting:1', alert!.seq, T0, alert!.id);
      store.setCursor('alert:hook:strategy-alerts', alert!.id, T0);
    });
    await dispatcher.runOnce();
    const sent = receiver.requests.filter((r) => r.headers['idempotency-key']?.toString().startsWith('strategy.alert:'));
    expect(sent.map((r) => [r.headers['idempotency-key'], JSON.parse(r.body).id])).toEqual([['strategy.alert:alerting:1', 'strategy.alert:alerting:1']]);
  });

  it('a sink that hangs does not hold up another', async () => {
    const receiver = await startReceiver((r) => (r.path === '/slow' ? 'hang' : { status: 200 }));
    const store = SnapshotStore.open(tempDbPath());
    cleanups.push(
      () => store.close(),
      () => receiver.close(),
    );
    const dispatcher = new AlertDispatcher({
      store,
      sinks: [
        { type: 'webhook', name: 'slow', url: `${receiver.url}/slow` },
        { type: 'webhook', name: 'fast', url: `${receiver.url}/fast` },
      ],
      sender: new HttpSender(60_000),
      idleMs: 50,
    });
    dispatcher.start();
    cleanups.unshift(() => dispatcher.stop().then(() => undefined));
    store.appendEvents([announced('x', 'rb_1'), announced('x', 'rb_2')]);
    dispatcher.notify();
    await waitFor('fast sink delivered both', () => store.outbox.summary().find((s) => s.sink === 'fast')?.delivered === 2, 3_000);
    expect(store.outbox.summary().find((s) => s.sink === 'slow')).toMatchObject({ delivered: 0, pending: 2 });
    await receiver.close();
  });
});

describe('a sink new to a database', () => {
  /** A dispatcher's run over real HTTP, on the system clock as a daemon's is: started, `started` done, until `done`, then stopped. */
  async function dispatchUntil(
    store: SnapshotStore,
    sinks: SinkConfig[],
    what: string,
    done: () => boolean,
    o: { logger?: Logger; started?: (dispatcher: AlertDispatcher) => void } = {},
  ): Promise<void> {
    const dispatcher = new AlertDispatcher({ store, sinks, logger: o.logger, sender: new HttpSender(2_000), idleMs: 10 });
    dispatcher.start();
    try {
      o.started?.(dispatcher);
      await waitFor(what, done);
    } finally {
      await dispatcher.stop();
    }
  }

  it('is sent what happens from its start, not the history; a sink the database knows catches up on what came while none ran (trial 28)', async () => {
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const store = SnapshotStore.open(tempDbPath());
    cleanups.push(() => store.close());
    const sinks: SinkConfig[] = [
      { type: 'webhook', name: 'old', url: `${receiver.url}/old` },
      { type: 'webhook', name: 'new', url: `${receiver.url}/new` },
    ];
    // 'old' ran here before: it has a cursor, at the start.
    store.setCursor(alertConsumer('old'), 0, T0);
    store.appendEvents([announced('x', 'rb_1'), announced('x', 'rb_2')]);
    const { logger, lines } = captureLogger();
    // What comes after its start reaches both sinks.
    await dispatchUntil(store, sinks, 'four deliveries', () => receiver.requests.length === 4, {
      logger,
      started: (dispatcher) => {
        store.appendEvents([announced('x', 'rb_3')]);
        dispatcher.notify();
      },
    });
    const to = (path: string) => receiver.requests.filter((r) => r.path === path).map((r) => r.headers['idempotency-key']);
    expect(to('/old')).toEqual(['rebalance.announced:x:rb_1', 'rebalance.announced:x:rb_2', 'rebalance.announced:x:rb_3']);
    expect(to('/new')).toEqual(['rebalance.announced:x:rb_3']);
    expect(lines.filter((l) => l.includes('alert sink new to this database'))).toHaveLength(1);
    // Known from now on: a restart does not skip what comes while it is down.
    store.appendEvents([announced('x', 'rb_4')]);
    await dispatchUntil(store, sinks, 'six deliveries', () => receiver.requests.length === 6);
    expect(to('/new')).toEqual(['rebalance.announced:x:rb_3', 'rebalance.announced:x:rb_4']);
  });

  it('on a new database is known from its start: killed before its first alert, the restart sends what came meanwhile (CI)', async () => {
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const store = SnapshotStore.open(tempDbPath());
    cleanups.push(() => store.close());
    const sinks: SinkConfig[] = [{ type: 'webhook', name: 'hook', url: receiver.url }];
    const first = new AlertDispatcher({ store, sinks, sender: new HttpSender(2_000), idleMs: 10 });
    first.start();
    await first.stop();
    store.appendEvents([announced('x', 'rb_1')]);
    await dispatchUntil(store, sinks, 'the delivery', () => receiver.requests.length === 1);
    expect(receiver.requests[0]!.headers['idempotency-key']).toBe('rebalance.announced:x:rb_1');
  });
});

describe('the outbox across a kill -9', () => {
  it('a process killed between send and record delivers once more on restart, with the same key, and records it once', async () => {
    const { spawn } = await import('node:child_process');
    let killed = false;
    let child: ReturnType<typeof spawn> | undefined;
    const receiver = await startReceiver(() => {
      if (killed) return { status: 200 };
      // The sink got the alert; the process dies before it can record the success.
      killed = true;
      child!.kill('SIGKILL');
      return 'hang';
    });
    const path = tempDbPath();
    const store = SnapshotStore.open(path);
    cleanups.push(() => receiver.close());
    // The sink ran on this database before the event: what came while no process ran is sent (a sink new to it would start after).
    store.setCursor(alertConsumer('hook'), 0, Date.now());
    store.appendEvents([announced('x', 'rb_1')]);
    store.close();
    child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/alerts/deliver.ts', path, `${receiver.url}/hook`], { stdio: 'ignore' });
    // A test that fails before the kill leaves no dispatcher running behind it.
    cleanups.push(() => void child?.kill('SIGKILL'));
    const exit = await new Promise<NodeJS.Signals | null>((resolve) => child!.on('exit', (_c, signal) => resolve(signal)));
    expect(exit).toBe('SIGKILL');
    const reopened = SnapshotStore.open(path);
    cleanups.push(() => reopened.close());
    expect(reopened.outbox.summary()[0]).toMatchObject({ pending: 1, delivered: 0 });
    const dispatcher = new AlertDispatcher({ store: reopened, sinks: [{ type: 'webhook', name: 'hook', url: `${receiver.url}/hook` }], sender: new HttpSender(2_000) });
    await dispatcher.runOnce();
    await dispatcher.runOnce();
    expect(receiver.requests.map((r) => r.headers['idempotency-key'])).toEqual(['rebalance.announced:x:rb_1', 'rebalance.announced:x:rb_1']);
    expect(reopened.outbox.summary()[0]).toMatchObject({ pending: 0, delivered: 1 });
  });
});
