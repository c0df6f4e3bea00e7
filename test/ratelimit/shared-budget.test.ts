import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/index.ts';
import { type LocalView, RedisBudgets, budgetKeys, credentialDigest } from '../../src/ratelimit/index.ts';
import { redactRedisUrl } from '../../src/redis/index.ts';
import { type TestRedis, startRedis } from '../helpers/redis.ts';

let redis: TestRedis;
/** A connection of the test's own, to read what the budget keeps in Redis. */
let admin: Redis;
beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
  // Refused while a test has Redis down, as expected: not an unhandled error event.
  admin.on('error', () => {});
});
afterAll(async () => {
  admin?.disconnect();
  await redis?.stop();
});

const opened: RedisBudgets[] = [];
afterEach(async () => {
  for (const b of opened.splice(0)) await b.close();
});

/** One "process": its own connection and id, as each daemon has. */
async function proc(name: string, options: Partial<ConstructorParameters<typeof RedisBudgets>[0]> = {}) {
  const budgets = new RedisBudgets({ url: redis.url, processId: name, ...options });
  opened.push(budgets);
  expect(await budgets.ready()).toBe(true);
  return budgets;
}

const view = (o: Partial<LocalView> = {}): LocalView => ({ limit: 10, burst: 5, windowMs: 60_000, remaining: undefined, resetInMs: undefined, ...o });
/** Polls until `check` holds (a fire-and-forget observation has landed), for at most 2 s. */
async function until(check: () => Promise<boolean>): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > 2_000) throw new Error('timed out waiting for Redis to show it');
    await new Promise((r) => setTimeout(r, 10));
  }
}

let n = 0;
const freshDigest = () => credentialDigest(`test-key-${++n}-${Date.now()}`);

describe('RedisBudgets (against a real redis-server)', () => {
  it('two processes on one credential draw from one bucket', async () => {
    const digest = freshDigest();
    const [a, b] = [(await proc('a')).budget(digest, 'key:a'), (await proc('b')).budget(digest, 'key:b')];
    const takes = [];
    for (let i = 0; i < 4; i++) takes.push(await a.take('normal', view()), await b.take('normal', view()));
    // Burst 5 shared: five go, the other three are told to wait about one token's time (6 s at 10/min).
    expect(takes.filter((t) => t.waitMs === 0)).toHaveLength(5);
    expect(takes.filter((t) => t.waitMs > 0).every((t) => t.waitMs > 5_000 && t.waitMs <= 6_000)).toBe(true);
    expect(new Set(takes.filter((t) => t.waitMs === 0).map((t) => t.seq))).toEqual(new Set([1, 2, 3, 4, 5]));
  });

  it('a smaller server limit, a spent fixed window and a 429 seen by one process hold back the others', async () => {
    const digest = freshDigest();
    const a = (await proc('a')).budget(digest, 'key:a');
    const b = (await proc('b')).budget(digest, 'key:b');
    const first = await a.take('normal', view({ limit: 100, burst: 100 }));
    a.observe({ seq: first.seq, serverLimit: 3, remaining: 0, resetInMs: 1_500, serverModel: 'window', pauseMs: undefined });
    await new Promise((r) => setTimeout(r, 50));
    const t = await b.take('high', view({ limit: 100, burst: 100 }));
    expect(t.waitMs).toBeGreaterThan(1_300);
    expect(t.waitMs).toBeLessThanOrEqual(1_500);
    expect(b.state()).toMatchObject({ mode: 'shared', limit: 3, burst: 3 });

    const other = freshDigest();
    const c = (await proc('c')).budget(other, 'key:c');
    const d = (await proc('d')).budget(other, 'key:d');
    const taken = await c.take('normal', view());
    c.observe({ seq: taken.seq, serverLimit: undefined, remaining: undefined, resetInMs: undefined, serverModel: 'unknown', pauseMs: 2_000 });
    await new Promise((r) => setTimeout(r, 50));
    const paused = await d.take('high', view());
    expect(paused.waitMs).toBeGreaterThan(1_800);
  });

  it('low priority leaves a reserve and yields while high priority work waits in another process', async () => {
    const digest = freshDigest();
    const backfill = (await proc('backfill')).budget(digest, 'key:x');
    const live = (await proc('live')).budget(digest, 'key:y');
    const v = view({ limit: 120, burst: 20 }); // one token per 500 ms
    let low = 0;
    while ((await backfill.take('low', v)).waitMs === 0) low++;
    // 20 tokens (and what refilled meanwhile): low stops with a reserve of 2 left, which high still gets at once.
    expect(low).toBeGreaterThanOrEqual(18);
    expect((await live.take('high', v)).waitMs).toBe(0);
    expect((await live.take('high', v)).waitMs).toBe(0);
    const waiting = await live.take('high', v);
    expect(waiting.waitMs).toBeGreaterThan(0);
    // While that high request waits, low is refused even once a token is back.
    await new Promise((r) => setTimeout(r, waiting.waitMs + 10));
    expect((await backfill.take('low', v)).waitMs).toBeGreaterThan(0);
    expect((await live.take('high', v)).waitMs).toBe(0);
  });

  it('a process with work queued takes several tokens in one call: numbered, its own, for its priority or higher, lapsing soon', async () => {
    const digest = freshDigest();
    const clock = new ManualClock(Date.now());
    const a = (await proc('lease-a', { clock })).budget(digest, 'key:a');
    const b = (await proc('lease-b')).budget(digest, 'key:b');
    const v = view({ limit: 60, burst: 40 }); // one token a second: nothing refills meanwhile to speak of
    const seqInRedis = async () => Number(await admin.hget(budgetKeys(digest)[0], 'seq'));
    // Four queued behind it: five tokens in one call (at most a tenth of the burst: 4).
    const first = await a.take('normal', { ...v, waiting: 4 });
    expect(first).toMatchObject({ waitMs: 0, seq: 1 });
    expect(await seqInRedis()).toBe(4);
    // Lower priority does not spend them; the same or higher does, without asking Redis.
    expect((await a.take('low', v)).seq).toBe(5);
    expect(await seqInRedis()).toBe(5);
    expect(await a.take('high', v)).toMatchObject({ waitMs: 0, seq: 2 });
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 3 });
    expect(await seqInRedis()).toBe(5);
    // Another process never gets them: it takes the next seq from Redis.
    expect((await b.take('normal', v)).seq).toBe(6);
    // Unused past 250 ms, the last one lapses: the next take asks Redis again.
    await clock.advance(300);
    expect((await a.take('normal', v)).seq).toBe(7);
  });

  it('takes no more than a fixed window has left, and never what low priority must leave in reserve', async () => {
    const digest = freshDigest();
    // Its lease never lapses on this clock: the takes below come from it, however busy the machine.
    const a = (await proc('lease-w', { clock: new ManualClock(Date.now()) })).budget(digest, 'key:w');
    // The server said 3 remain in a window that resets in 5 s.
    const v = view({ limit: 600, burst: 200, remaining: 3, resetInMs: 5_000 });
    expect(await a.take('normal', { ...v, waiting: 50 })).toMatchObject({ waitMs: 0, seq: 1 });
    expect(Number(await admin.hget(budgetKeys(digest)[0], 'seq'))).toBe(3);
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 2 });
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 3 });
    expect((await a.take('normal', v)).waitMs).toBeGreaterThan(4_000);

    const low = (await proc('lease-low')).budget(freshDigest(), 'key:l');
    // Burst 30: low leaves a reserve of 3 of them (a last call granting all it asked for would leave 1).
    const lv = view({ limit: 60, burst: 30 });
    let taken = 0;
    for (let i = 0; i < 40; i++) if ((await low.take('low', { ...lv, waiting: 40 })).waitMs === 0) taken++;
    expect(taken).toBeGreaterThanOrEqual(27);
    expect(taken).toBeLessThanOrEqual(28);
  });

  it("counts a take still on its way when a later one's response comes back first: a window's limit is never overshot", async () => {
    const digest = freshDigest();
    const a = (await proc('order-a')).budget(digest, 'key:a');
    const b = (await proc('order-b')).budget(digest, 'key:b');
    const v = view({ limit: 600, burst: 200 });
    // a's request (seq 1) is slow on its way; b's (seq 2) reaches the server first, which counts 1 of its 10.
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 1 });
    expect(await b.take('normal', v)).toMatchObject({ waitMs: 0, seq: 2 });
    b.observe({ seq: 2, serverLimit: 10, remaining: 9, resetInMs: 5_000, serverModel: 'window', pauseMs: undefined });
    await until(async () => (await admin.hget(budgetKeys(digest)[0], 'obsseq')) === '2');
    // Nine left by the server's count, but a's request will take one of them: eight more go, not nine.
    let granted = 0;
    while ((await b.take('normal', v)).waitMs === 0) granted++;
    expect(granted).toBe(8);
    // Its response, older news, only ends its take: the window stays spent.
    a.observe({ seq: 1, serverLimit: 10, remaining: 8, resetInMs: 5_000, serverModel: 'window', pauseMs: undefined });
    await until(async () => (await admin.zcard(budgetKeys(digest)[2])) === 8);
    expect((await b.take('high', v)).waitMs).toBeGreaterThan(4_000);
  });

  it("a later take's response that reached the server before earlier takes already answered does not raise what a fixed window has left", async () => {
    const digest = freshDigest();
    const a = (await proc('low-a')).budget(digest, 'key:a');
    const b = (await proc('low-b')).budget(digest, 'key:b');
    const obsseq = async () => admin.hget(budgetKeys(digest)[0], 'obsseq');
    const v = view({ limit: 600, burst: 200, windowMs: 1_000 });
    for (const seq of [1, 2]) expect(await b.take('normal', v)).toMatchObject({ waitMs: 0, seq });
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 3 });
    // The server (10 per window) counted seq 3 first, then 1, then 2: 7 left. Seqs 1 and 2 are answered first.
    const told = (seq: number, remaining: number) => ({ seq, serverLimit: 10, remaining, resetInMs: 5_000, serverModel: 'window' as const, pauseMs: undefined });
    b.observe(told(1, 8));
    await until(async () => (await obsseq()) === '1');
    b.observe(told(2, 7));
    await until(async () => (await obsseq()) === '2');
    // Seq 3's answer, the newest take, says 9: it was counted before the two, which no longer count as on their way.
    a.observe(told(3, 9));
    await until(async () => (await obsseq()) === '3');
    // Long enough for the bucket to refill, not for the window (5 s) to end: what the window has left decides.
    await new Promise((r) => setTimeout(r, 1_100));
    let granted = 0;
    while ((await a.take('normal', v)).waitMs === 0) granted++;
    expect(granted).toBeLessThanOrEqual(7);
    expect(granted).toBeGreaterThanOrEqual(6);
  });

  it('a process that takes a fixed window for a bucket does not lift the window another process told', async () => {
    const digest = freshDigest();
    const a = (await proc('model-a')).budget(digest, 'key:a');
    const b = (await proc('model-b')).budget(digest, 'key:b');
    const obsseq = async () => admin.hget(budgetKeys(digest)[0], 'obsseq');
    const v = view({ limit: 600, burst: 200, windowMs: 1_000 });
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 1 });
    expect(await b.take('normal', v)).toMatchObject({ waitMs: 0, seq: 2 });
    const told = (seq: number, remaining: number, serverModel: 'window' | 'bucket') => ({ seq, serverLimit: 10, remaining, resetInMs: 5_000, serverModel, pauseMs: undefined });
    a.observe(told(1, 1, 'window'));
    await until(async () => (await obsseq()) === '1');
    // b's gate saw its responses out of order and calls the server a bucket: the window (1 left of 10) still holds.
    b.observe(told(2, 0, 'bucket'));
    await until(async () => (await obsseq()) === '2');
    // Long enough for the bucket to refill, not for the window (5 s) to end.
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await b.take('normal', v)).waitMs).toBeGreaterThan(3_000);
  });

  it('in a token bucket, what a response says is left is lowered by the takes after it only', async () => {
    const digest = freshDigest();
    const a = (await proc('order-bucket')).budget(digest, 'key:a');
    const v = view({ limit: 6, burst: 200 }); // nothing refills meanwhile to speak of
    for (const seq of [1, 2, 3]) expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq });
    // Seq 1's response is still on its way; the server had counted it when it answered seq 2 with 50 left.
    a.observe({ seq: 2, serverLimit: undefined, remaining: 50, resetInMs: undefined, serverModel: 'bucket', pauseMs: undefined });
    await until(async () => (await admin.hget(budgetKeys(digest)[0], 'obsseq')) === '2');
    const tokens = Number(await admin.hget(budgetKeys(digest)[0], 'tokens'));
    expect(tokens).toBeGreaterThanOrEqual(49);
    expect(tokens).toBeLessThan(49.1);
  });

  it('in a token bucket, requests that overtook others on the way hold the tokens low only until a take sent alone is answered', async () => {
    const digest = freshDigest();
    const a = (await proc('solo-bucket')).budget(digest, 'key:a');
    const v = view({ limit: 6, burst: 40 }); // nothing refills meanwhile to speak of
    const tokens = async () => Number(await admin.hget(budgetKeys(digest)[0], 'tokens'));
    const observe = (seq: number, remaining: number) => a.observe({ seq, serverLimit: undefined, remaining, resetInMs: undefined, serverModel: 'bucket', pauseMs: undefined });
    const landed = (seq: number) => until(async () => !(await admin.zrange(budgetKeys(digest)[2], '0', '-1')).includes(String(seq)));
    for (const seq of [1, 2]) expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq });
    // Seq 2 reached the server first (39 left), then seq 1 (38 left); seq 1 is answered first.
    observe(1, 38);
    await landed(1);
    observe(2, 39);
    await landed(2);
    // Seq 1's answer counted seq 2 as still to come, though the server had counted it: one too few.
    expect(await tokens()).toBeLessThan(37.1);
    // Taken with none on its way: its answer (37 left) is the server's count, and raises the tokens to it.
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 3 });
    expect(await tokens()).toBeLessThan(36.1);
    observe(3, 37);
    await landed(3);
    expect(await tokens()).toBeGreaterThanOrEqual(37);
    // One taken while another is on its way is not: its answer only ever lowers them.
    for (const seq of [4, 5]) expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq });
    observe(5, 40);
    await landed(5);
    expect(await tokens()).toBeLessThan(35.1);
  });

  it("a take sent just before a fixed window's end counts in the next window until a response says otherwise", async () => {
    const digest = freshDigest();
    const a = (await proc('edge-a')).budget(digest, 'key:a');
    // The server: 10 per window, this one ending in 2 s. Ten taken, nine answered; the tenth is still on its way at the edge.
    const v = view({ limit: 600, burst: 200, windowMs: 1_000 });
    for (let seq = 1; seq <= 10; seq++) {
      expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq });
      if (seq < 10) a.observe({ seq, serverLimit: 10, remaining: 10 - seq, resetInMs: 2_000, serverModel: 'window', pauseMs: undefined });
    }
    await until(async () => (await admin.hget(budgetKeys(digest)[0], 'obsseq')) === '9');
    expect((await a.take('normal', v)).waitMs).toBeGreaterThan(0);
    // Past the edge (and with the bucket refilled): nine go in the new window, not ten.
    await new Promise((r) => setTimeout(r, 2_500));
    let granted = 0;
    while ((await a.take('normal', v)).waitMs === 0) granted++;
    expect(granted).toBe(9);
  });

  it('a fixed window no response told the end of ends a window length after the last: with no response coming (the API down at the edge) the budget is not spent for good', async () => {
    const digest = freshDigest();
    const a = (await proc('stall-a')).budget(digest, 'key:a');
    const endedWithoutNews = (seq: number) => a.observe({ seq, serverLimit: undefined, remaining: undefined, resetInMs: undefined, serverModel: 'unknown', pauseMs: undefined });
    // The server: 3 per 1 s window, this one ending in 300 ms with 2 left; then no response carries headers.
    const v = view({ limit: 600, burst: 200, windowMs: 1_000 });
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 1 });
    a.observe({ seq: 1, serverLimit: 3, remaining: 2, resetInMs: 300, serverModel: 'window', pauseMs: undefined });
    await until(async () => (await admin.hget(budgetKeys(digest)[0], 'obsseq')) === '1');
    const edge = Date.now() + 300;
    // Spend this window and the next (whose end nobody tells), each take ending without news.
    let spent = 0;
    while (spent < 5) {
      const t = await a.take('normal', v);
      if (t.waitMs === 0) {
        spent++;
        endedWithoutNews(t.seq!);
      } else await new Promise((r) => setTimeout(r, Math.min(t.waitMs, 100)));
      expect(Date.now() - edge).toBeLessThan(20_000);
    }
    // A later window grants again (before: refused for good, every priority, every process).
    const deadline = Date.now() + 5_000;
    let granted = false;
    while (!granted && Date.now() < deadline) {
      granted = (await a.take('high', v)).waitMs === 0;
      if (!granted) await new Promise((r) => setTimeout(r, 100));
    }
    expect(granted).toBe(true);
  });

  it('in a fixed window low priority leaves a reserve of what the window has left, not only of the bucket', async () => {
    const digest = freshDigest();
    const backfill = (await proc('reserve-low')).budget(digest, 'key:x');
    const live = (await proc('reserve-high')).budget(digest, 'key:y');
    // A burst of 200 (a reserve of 21 for low priority), a full bucket, and a window with 3 left for 5 s.
    const v = view({ limit: 600, burst: 200 });
    expect((await live.take('high', v)).waitMs).toBe(0);
    live.observe({ seq: 1, serverLimit: undefined, remaining: 3, resetInMs: 5_000, serverModel: 'window', pauseMs: undefined });
    await until(async () => (await admin.hget(budgetKeys(digest)[0], 'wrem')) === '3');
    const low = await backfill.take('low', v);
    expect(low.waitMs).toBeGreaterThan(4_000);
    expect(low.waitMs).toBeLessThanOrEqual(5_000);
    for (let i = 0; i < 3; i++) expect((await live.take('high', v)).waitMs).toBe(0);
  });

  it('a response from a window already over, answered before its end, does not start the next window afresh', async () => {
    const digest = freshDigest();
    const a = (await proc('stale-a')).budget(digest, 'key:a');
    const obsseq = async () => admin.hget(budgetKeys(digest)[0], 'obsseq');
    const v = view({ limit: 600, burst: 200, windowMs: 1_000 });
    // Window 1 (10 per window) ends in 300 ms; seqs 2 and 3 are taken before its end.
    for (const seq of [1, 2, 3]) expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq });
    a.observe({ seq: 1, serverLimit: 10, remaining: 9, resetInMs: 300, serverModel: 'window', pauseMs: undefined });
    await until(async () => (await obsseq()) === '1');
    await new Promise((r) => setTimeout(r, 350));
    // Seq 2 reached the server in window 2 (ending in 5 s); seq 3 in window 1, answered just before its end.
    a.observe({ seq: 2, serverLimit: 10, remaining: 9, resetInMs: 5_000, serverModel: 'window', pauseMs: undefined });
    await until(async () => (await obsseq()) === '2');
    a.observe({ seq: 3, serverLimit: 10, remaining: 8, resetInMs: 20, serverModel: 'window', pauseMs: undefined });
    await until(async () => (await obsseq()) === '3');
    // Long enough for the bucket to refill and that short reset to pass: window 2 still has 9 at most.
    await new Promise((r) => setTimeout(r, 1_100));
    let granted = 0;
    while ((await a.take('normal', v)).waitMs === 0) granted++;
    expect(granted).toBeGreaterThanOrEqual(8);
    expect(granted).toBeLessThanOrEqual(9);
  });

  it('the first response of a new fixed window starts it, even one to an older take', async () => {
    const digest = freshDigest();
    const a = (await proc('older-a')).budget(digest, 'key:a');
    const b = (await proc('older-b')).budget(digest, 'key:b');
    const obsseq = async () => admin.hget(budgetKeys(digest)[0], 'obsseq');
    const v = view({ limit: 600, burst: 200, windowMs: 1_000 });
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 1 });
    expect(await b.take('normal', v)).toMatchObject({ waitMs: 0, seq: 2 });
    // Seq 2 was counted in window 1, which (its response said) ends in 1 s; seq 1, sent late,
    // in window 2, ending in 5 s: the server's window 1 ended sooner than that response told.
    b.observe({ seq: 2, serverLimit: 10, remaining: 8, resetInMs: 1_000, serverModel: 'window', pauseMs: undefined });
    await until(async () => (await obsseq()) === '2');
    a.observe({ seq: 1, serverLimit: 10, remaining: 9, resetInMs: 5_000, serverModel: 'window', pauseMs: undefined });
    await until(async () => (await admin.zcard(budgetKeys(digest)[2])) === 0);
    // Past window 1's told end, and the bucket refilled: window 2 has 9 left, not the whole 10.
    await new Promise((r) => setTimeout(r, 1_100));
    let granted = 0;
    while ((await a.take('normal', v)).waitMs === 0) granted++;
    expect(granted).toBeGreaterThanOrEqual(8);
    expect(granted).toBeLessThanOrEqual(9);
  });

  it('a lease never holds a process open: its lapse timer does not keep the event loop alive', async () => {
    const timers: NodeJS.Timeout[] = [];
    const clock = {
      now: () => Date.now(),
      setTimeout: (fn: () => void, ms: number) => {
        const timer = setTimeout(fn, ms);
        timers.push(timer);
        return timer;
      },
      clearTimeout: (timer: unknown) => clearTimeout(timer as NodeJS.Timeout),
    };
    const a = (await proc('unref-a', { clock })).budget(freshDigest(), 'key:a');
    expect(await a.take('normal', { ...view({ limit: 60, burst: 40 }), waiting: 4 })).toMatchObject({ waitMs: 0, seq: 1 });
    expect(timers).toHaveLength(1);
    expect(timers[0]!.hasRef()).toBe(false);
  });

  it('tokens of a lease left unused go back to the shared bucket when it lapses, once', async () => {
    const digest = freshDigest();
    const clock = new ManualClock(Date.now());
    const a = (await proc('return-a', { clock })).budget(digest, 'key:a');
    const tokens = async () => Number(await admin.hget(budgetKeys(digest)[0], 'tokens'));
    const v = view({ limit: 6, burst: 40 }); // one token in 10 s: nothing refills meanwhile to speak of
    expect(await a.take('normal', { ...v, waiting: 9 })).toMatchObject({ waitMs: 0, seq: 1 });
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 2 });
    // Four taken (a tenth of the burst), two handed out; the other two lapse unsent at 250 ms and return.
    expect(await tokens()).toBeLessThan(36.1);
    await clock.advance(250);
    await until(async () => (await tokens()) >= 38);
    expect(await tokens()).toBeLessThan(38.1);
    expect(await admin.zrange(budgetKeys(digest)[2], '0', '-1')).toEqual(['1', '2']);
    // A lapsed lease is not returned twice, and the next take asks Redis for seq 5.
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 5 });
    expect(await tokens()).toBeLessThan(37.1);
  });

  it('tokens of a lease a process held when it fell back to local go back once Redis answers again', async () => {
    const digest = freshDigest();
    const clock = new ManualClock(Date.now());
    const a = (await proc('fallback-return-a', { clock, commandTimeoutMs: 200, probeEveryMs: 100 })).budget(digest, 'key:a');
    const outstanding = async () => admin.zrange(budgetKeys(digest)[2], '0', '-1');
    const v = view({ limit: 6, burst: 40 });
    expect(await a.take('normal', { ...v, waiting: 9 })).toMatchObject({ waitMs: 0, seq: 1 });
    expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq: 2 });
    // Redis stops answering: low priority work asks it (the lease is for normal), times out, and falls back.
    await admin.call('CLIENT', 'PAUSE', '700', 'ALL');
    expect((await a.take('low', v)).seq).toBeUndefined();
    expect(a.state().mode).toBe('local');
    // The lease (seqs 3 and 4) lapses while local; Redis answers again, and the next take's probe finds it.
    await clock.advance(250);
    await new Promise((r) => setTimeout(r, 800));
    await clock.advance(100);
    await a.take('normal', v);
    await until(async () => a.state().mode === 'shared');
    // Seqs 3 and 4 come off the outstanding takes. (Seq 5, the take that timed out here, ran in
    // Redis once the pause ended; no process knows it, so it stays until the sweep.)
    await until(async () => !(await outstanding()).includes('3'));
    expect(await outstanding()).toEqual(['1', '2', '5']);
  });

  it('responses that arrive together reach Redis in one call: the newest news, and every take ended', async () => {
    const digest = freshDigest();
    // No heartbeat call in between to count.
    const a = (await proc('batch-a', { heartbeatEveryMs: 60_000 })).budget(digest, 'key:a');
    const scriptCalls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec((await admin.info('commandstats')) as string)?.[1] ?? 0);
    const v = view({ limit: 600, burst: 200 });
    for (const seq of [1, 2, 3]) expect(await a.take('normal', v)).toMatchObject({ waitMs: 0, seq });
    const before = await scriptCalls();
    a.observe({ seq: 3, serverLimit: 100, remaining: 50, resetInMs: undefined, serverModel: 'bucket', pauseMs: undefined });
    a.observe({ seq: 2, serverLimit: 100, remaining: 51, resetInMs: undefined, serverModel: 'bucket', pauseMs: undefined });
    a.observe({ seq: 1, serverLimit: undefined, remaining: undefined, resetInMs: undefined, serverModel: 'bucket', pauseMs: undefined });
    await until(async () => (await admin.zcard(budgetKeys(digest)[2])) === 0);
    expect(await scriptCalls()).toBe(before + 1);
    expect(await admin.hmget(budgetKeys(digest)[0], 'obsseq', 'limit')).toEqual(['3', '100']);
    // The bucket holds what the newest response said was left.
    expect(Number(await admin.hget(budgetKeys(digest)[0], 'tokens'))).toBeLessThan(51);
  });

  it('a take of a budget Redis has lost since (restarted empty, evicted) ends no take of the one there now, nor spends it', async () => {
    const digest = freshDigest();
    const a = (await proc('lost-a')).budget(digest, 'key:a');
    const b = (await proc('lost-b')).budget(digest, 'key:b');
    const v = view({ limit: 60, burst: 40 });
    const old = await a.take('normal', v);
    // A budget is told apart from the one before by when it was made, in Redis's milliseconds:
    // lost and made anew within the same millisecond (only here, on a fast machine) they would be one.
    await new Promise((r) => setTimeout(r, 5));
    await admin.del(...budgetKeys(digest));
    // Another process creates the budget anew: its first take is seq 1 again.
    const fresh = await b.take('normal', v);
    expect([old.seq, fresh.seq]).toEqual([1, 1]);
    // The response to the old take says the server has nothing left (of the old budget's count).
    a.observe({ seq: old.seq, born: old.born, serverLimit: undefined, remaining: 0, resetInMs: undefined, serverModel: 'bucket', pauseMs: undefined });
    await new Promise((resolve) => setImmediate(resolve));
    // One connection runs its commands in order: this take's answer comes after the observation.
    await a.take('normal', v);
    expect(await admin.zrange(budgetKeys(digest)[2], '0', '-1')).toEqual(['1', '2']);
    expect(Number(await admin.hget(budgetKeys(digest)[0], 'tokens'))).toBeGreaterThan(37);
  });

  it('a take that ends while Redis does not answer is ended there once it does, not left outstanding until the sweep', async () => {
    const digest = freshDigest();
    const a = (await proc('away-a', { commandTimeoutMs: 100, probeEveryMs: 100 })).budget(digest, 'key:a');
    const v = view({ limit: 60, burst: 40 });
    const take = await a.take('normal', v);
    await admin.call('CLIENT', 'PAUSE', '500', 'ALL');
    await a.take('normal', v);
    expect(a.state().mode).toBe('local');
    a.observe({ seq: take.seq, born: take.born, serverLimit: undefined, remaining: undefined, resetInMs: undefined, serverModel: 'bucket', pauseMs: undefined });
    const outstanding = async () => (await admin.zrange(budgetKeys(digest)[2], '0', '-1')).includes(String(take.seq));
    const back = Date.now();
    while (a.state().mode === 'local' && Date.now() - back < 3_000) {
      await a.take('normal', v);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(a.state().mode).toBe('shared');
    await until(async () => !(await outstanding()));
  });

  it('keys carry a hash tag and a digest, never the credential', async () => {
    const secret = 'ib_live_supersecret_key';
    const budgets = await proc('k');
    await budgets.budget(credentialDigest(secret), 'key:k').take('normal', view());
    const keys = await admin.keys('*');
    const [bucket, processes] = budgetKeys(credentialDigest(secret));
    expect(keys).toEqual(expect.arrayContaining([bucket, processes]));
    expect(keys.join(' ')).not.toContain(secret);
    for (const k of budgetKeys(credentialDigest(secret))) expect(/\{[0-9a-f]{32}\}/.exec(k)?.[0]).toBe(`{${credentialDigest(secret)}}`);
    // One slot for both keys, as Redis Cluster needs for one script.
    expect(await admin.pttl(bucket)).toBeGreaterThan(0);
  });

  it('falls back to 1/N of the budget when Redis is down, logs it once, and returns when Redis is back', async () => {
    const digest = freshDigest();
    const lines: { level: string; msg: string; obj: unknown }[] = [];
    const logger = {
      info: (obj: unknown, msg: string) => lines.push({ level: 'info', msg, obj }),
      warn: (obj: unknown, msg: string) => lines.push({ level: 'warn', msg, obj }),
      error: () => {},
      debug: () => {},
      child: () => logger,
    } as never;
    const a = (await proc('a', { logger, probeEveryMs: 200, commandTimeoutMs: 200 })).budget(digest, 'key:a');
    const others = [await proc('b'), await proc('c'), await proc('d')];
    const v = view({ limit: 1_200, burst: 20 }); // 20 per second, shared
    for (const o of others) await o.budget(digest, 'key:o').take('normal', v);
    expect((await a.take('normal', v)).waitMs).toBe(0);
    await redis.kill();
    // Four processes seen: this one paces at 5 per second, starting empty.
    const started = Date.now();
    let went = 0;
    while (Date.now() - started < 1_000) {
      const t = await a.take('normal', v);
      if (t.waitMs === 0) went++;
      else await new Promise((r) => setTimeout(r, t.waitMs));
    }
    expect(a.state()).toMatchObject({ mode: 'local', share: 4 });
    // What the shared budget holds is unknown while Redis is away: the local pacing's bucket is not it.
    expect(a.state().tokens).toBeUndefined();
    expect(went).toBeGreaterThanOrEqual(3);
    expect(went).toBeLessThanOrEqual(6);
    expect(lines.filter((l) => l.msg.startsWith('shared rate budget unreachable'))).toHaveLength(1);

    await redis.restart();
    const back = Date.now();
    while (a.state().mode === 'local' && Date.now() - back < 5_000) {
      await a.take('normal', v);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(a.state().mode).toBe('shared');
    expect(lines.filter((l) => l.msg.startsWith('shared rate budget reachable again'))).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toContain('password');
  });

  it('a process with nothing to take is back on the shared budget within about a second of Redis, not at its next take', async () => {
    const digest = freshDigest();
    // A probe interval far longer than the test: only the connection coming back can bring it back.
    const a = (await proc('idle', { probeEveryMs: 60_000, commandTimeoutMs: 200 })).budget(digest, 'key:idle');
    const v = view({ limit: 1_200, burst: 20 });
    expect((await a.take('normal', v)).waitMs).toBe(0);
    await redis.kill();
    await a.take('normal', v);
    expect(a.state().mode).toBe('local');
    // Down long enough for the reconnect delay to reach its cap.
    await new Promise((r) => setTimeout(r, 4_000));
    await redis.restart();
    const back = Date.now();
    while (a.state().mode === 'local' && Date.now() - back < 3_000) await new Promise((r) => setTimeout(r, 20));
    expect(a.state().mode).toBe('shared');
    expect(Date.now() - back).toBeLessThan(1_500);
  }, 15_000);

  it('checks its timings in the constructor, naming the option and the value', () => {
    expect(() => new RedisBudgets({ url: redis.url, probeEveryMs: 0 })).toThrow('Expected `probeEveryMs` to be a number of ms in (0, 60000], got `0` (number)');
    expect(() => new RedisBudgets({ url: redis.url, commandTimeoutMs: 60_001 })).toThrow('Expected `commandTimeoutMs` to be a number of ms in (0, 60000], got `60001`');
    expect(() => new RedisBudgets({ url: redis.url, heartbeatEveryMs: Number.NaN })).toThrow('Expected `heartbeatEveryMs`');
  });

  it('never shows a Redis password in what it logs', () => {
    expect(redactRedisUrl('redis://:hunter2@db.example:6379/2')).toBe('redis://:***@db.example:6379/2');
    expect(redactRedisUrl('rediss://ops:hunter2@db.example:6380')).toBe('rediss://***:***@db.example:6380');
    const unreachable = new RedisBudgets({ url: 'redis://:hunter2@127.0.0.1:1', processId: 'x' });
    opened.push(unreachable);
    expect(unreachable.where).not.toContain('hunter2');
  });
});

// The processes' connections are real: check none is left open (bottleneck's growing-connections failure).
it('one connection per process, closed again by close()', async () => {
  const probe = new Redis(redis.url);
  const count = async () => ((await probe.call('CLIENT', 'LIST')) as string).trim().split('\n').length;
  // The file's own connection is back since the Redis restart of an earlier test: it is not counted coming in.
  await admin.ping();
  const before = await count();
  const budgets = await proc('conn');
  for (let i = 0; i < 5; i++) await budgets.budget(freshDigest(), `key:${i}`).take('normal', view());
  expect(await count()).toBe(before + 1);
  await budgets.close();
  opened.splice(opened.indexOf(budgets), 1);
  await new Promise((r) => setTimeout(r, 100));
  expect(await count()).toBe(before);
  probe.disconnect();
});
