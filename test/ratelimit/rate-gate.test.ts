import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/index.ts';
import { type LocalView, type Permit, RateGate, type RateGateOptions, type SharedBudget, type SharedObservation } from '../../src/ratelimit/index.ts';

const WINDOW = 1_000;

function gate(overrides: Partial<RateGateOptions> = {}) {
  const clock = new ManualClock(Date.UTC(2026, 10, 22, 10, 0, 0));
  const g = new RateGate({ limit: 10, burst: 5, windowMs: WINDOW, clock, random: () => 0, jitterMs: 0, ...overrides });
  return { g, clock };
}

/** Headers a server would send; `resetIn` in ms from now, rounded up to whole seconds like the real header. */
function headers(clock: ManualClock, h: { limit?: number; remaining?: number; resetAt?: number; retryAfterS?: number; date?: number }) {
  const out: Record<string, string> = {};
  if (h.limit !== undefined) out['x-ratelimit-limit'] = String(h.limit);
  if (h.remaining !== undefined) out['x-ratelimit-remaining'] = String(h.remaining);
  if (h.resetAt !== undefined) out['x-ratelimit-reset'] = String(Math.ceil(h.resetAt / 1000));
  if (h.retryAfterS !== undefined) out['retry-after'] = String(h.retryAfterS);
  out.date = new Date(h.date ?? clock.now()).toUTCString();
  return out;
}

/** Acquires `n` permits one after another, releasing each with `respond`, and returns when each was admitted. */
async function admitTimes(g: RateGate, clock: ManualClock, n: number, respond: (p: Permit) => Record<string, string> = () => ({})) {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const p = g.acquire();
    await clock.runAll(60_000);
    const permit = await p;
    times.push(clock.now());
    g.release(permit, { status: 200, headers: respond(permit) });
  }
  return times;
}

describe('RateGate', () => {
  it('checks its options and shows the value it received', () => {
    const clock = new ManualClock();
    expect(() => new RateGate({ limit: 0, burst: 5, clock })).toThrow(/`limit`.*got `0`/);
    expect(() => new RateGate({ limit: 10, burst: Number.NaN, clock })).toThrow(/`burst`.*got `NaN`/);
    expect(() => new RateGate({ limit: 10, burst: 5, windowMs: -1, clock })).toThrow(/`windowMs`.*got `-1`/);
  });

  it('sends the burst at once, then paces to limit per window', async () => {
    const { g, clock } = gate();
    const start = clock.now();
    const times = await admitTimes(g, clock, 8);
    expect(times.slice(0, 5).map((t) => t - start)).toEqual([0, 0, 0, 0, 0]);
    // 10 per 1000 ms: one token every 100 ms once the burst is spent.
    expect(times.slice(5).map((t) => t - start)).toEqual([100, 200, 300]);
  });

  it('keeps only one request in flight until the first response arrives', async () => {
    const { g, clock } = gate();
    const first = await g.acquire();
    let secondAdmitted = false;
    const second = g.acquire().then((p) => {
      secondAdmitted = true;
      return p;
    });
    await clock.advance(5_000);
    expect(secondAdmitted).toBe(false);
    g.release(first, { status: 200, headers: {} });
    await clock.advance(0);
    expect(secondAdmitted).toBe(true);
    g.release(await second);
  });

  it('keeps one request in flight while answers carry no X-RateLimit-Remaining, for up to a window', async () => {
    const { g, clock } = gate();
    const first = await g.acquire();
    g.release(first, { status: 200, headers: {} });
    const second = await g.acquire();
    let thirdAdmitted = false;
    const third = g.acquire().then((p) => {
      thirdAdmitted = true;
      return p;
    });
    await clock.advance(WINDOW - 1);
    expect(thirdAdmitted).toBe(false);
    // A whole window of answers without the headers: this server does not send them.
    await clock.advance(1);
    expect(thirdAdmitted).toBe(true);
    g.release(second);
    g.release(await third);
  });

  it('starts from a seed: a spent window holds everything until its reset', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 22, 10, 0, 0));
    const start = clock.now();
    const seed = { limit: 8, remaining: 0, resetAt: start + 4_000, pausedUntil: undefined, serverModel: 'window' as const, at: start - 1_000 };
    const g = new RateGate({ limit: 10, burst: 5, windowMs: WINDOW, clock, random: () => 0, jitterMs: 0, seed });
    const times = await admitTimes(g, clock, 1);
    expect(times[0]! - start).toBe(4_000);
    expect(g.state().limit).toBe(8);
  });

  it('starts from a seed: a bucket has refilled since the seed was taken, and a reset already past is ignored', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 22, 10, 0, 0));
    const start = clock.now();
    const bucket = new RateGate({
      limit: 10,
      burst: 5,
      windowMs: WINDOW,
      clock,
      seed: { limit: 10, remaining: 0, resetAt: undefined, pausedUntil: undefined, serverModel: 'bucket', at: start - 200 },
    });
    expect(bucket.state().tokens).toBe(2);
    const window = new RateGate({
      limit: 10,
      burst: 5,
      windowMs: WINDOW,
      clock,
      seed: { limit: 10, remaining: 0, resetAt: start - 1, pausedUntil: undefined, serverModel: 'window', at: start - 900 },
    });
    expect(window.state().tokens).toBe(5);
  });

  it('tightens to a smaller X-RateLimit-Limit from the server', async () => {
    const { g, clock } = gate({ limit: 100, burst: 150 });
    const start = clock.now();
    // The server says 4 per window and has 3 left; after that, it refills continuously.
    const times = await admitTimes(g, clock, 6, (p) => headers(clock, { limit: 4, remaining: Math.max(0, 3 - p.seq + 1), resetAt: clock.now() + 5 * WINDOW }));
    const state = g.state();
    expect(state.limit).toBe(4);
    expect(state.burst).toBe(4);
    expect(state.serverModel).toBe('bucket');
    // The first response leaves 3: those go at once; then 4 per 1000 ms, one every 250 ms.
    expect(times.map((t) => t - start)).toEqual([0, 0, 0, 0, 250, 500]);
  });

  it("takes no limit from a 401: its headers are the allowance of a refused key, not this gate's (found by a trial: a bad key logged 'pacing to it' before its error)", async () => {
    const { g, clock } = gate({ limit: 100, burst: 150 });
    const permit = g.acquire();
    await clock.runAll(60_000);
    g.release(await permit, { status: 401, headers: headers(clock, { limit: 4, remaining: 0, resetAt: clock.now() + 5 * WINDOW }) });
    expect(g.state()).toMatchObject({ limit: 100, burst: 150 });
    expect(g.state().remaining).toBeUndefined();
  });

  it('waits for X-RateLimit-Reset once a fixed window is spent', async () => {
    const { g, clock } = gate({ limit: 100, burst: 100, windowMs: 10_000 });
    const windowEnd = clock.now() + 5_000;
    let remaining = 3;
    const times = await admitTimes(g, clock, 5, () => {
      if (clock.now() >= windowEnd) remaining = 3;
      remaining = Math.max(0, remaining - 1);
      return headers(clock, { limit: 3, remaining, resetAt: windowEnd });
    });
    // Three fit in the first window; the fourth waits for the reset.
    expect(times[2]! < windowEnd).toBe(true);
    expect(times[3]!).toBeGreaterThanOrEqual(windowEnd);
    expect(g.state().serverModel).not.toBe('bucket');
  });

  it('holds requests once admissions in flight spend a fixed window, until its reset', async () => {
    const { g, clock } = gate({ limit: 100, burst: 100, windowMs: 10_000 });
    const reset = clock.now() + 4_000;
    const probe = await g.acquire();
    g.release(probe, { status: 200, headers: headers(clock, { limit: 100, remaining: 2, resetAt: reset }) });
    // Two more fit; they are still in flight when the third asks.
    const inFlight = [await g.acquire(), await g.acquire()];
    let third = false;
    const next = g.acquire().then((p) => {
      third = true;
      return p;
    });
    await clock.advance(3_999);
    expect(third).toBe(false);
    await clock.advance(2);
    expect(third).toBe(true);
    for (const p of [...inFlight, await next]) g.release(p);
  });

  it('does not mistake responses served out of order for a refilling bucket', async () => {
    const { g, clock } = gate({ limit: 100, burst: 100, windowMs: 10_000 });
    const reset = clock.now() + 4_000;
    const probe = await g.acquire();
    g.release(probe, { status: 200, headers: headers(clock, { limit: 100, remaining: 50, resetAt: reset }) });
    const permits = await Promise.all(Array.from({ length: 6 }, () => g.acquire()));
    // The server handled them in reverse order: the last admitted saw the most left.
    for (const [i, p] of permits.entries()) g.release(p, { status: 200, headers: headers(clock, { limit: 100, remaining: 44 + i, resetAt: reset }) });
    expect(g.state().serverModel).not.toBe('bucket');
  });

  it('in a bucket, responses served out of order hold the tokens low only until a request sent alone is answered', async () => {
    const { g, clock } = gate({ limit: 100, burst: 100, windowMs: 10_000 });
    // A reset a minute away: a bucket refilling to its burst, not a window.
    const answer = (p: Permit, remaining: number) => g.release(p, { status: 200, headers: headers(clock, { limit: 100, remaining, resetAt: clock.now() + 60_000 }) });
    answer(await g.acquire(), 99);
    const [second, third] = [await g.acquire(), await g.acquire()];
    // The server handled the third first (98 left), then the second (97 left); the second is answered first.
    answer(second, 97);
    answer(third, 98);
    expect(g.state().serverModel).toBe('bucket');
    expect(g.state().tokens).toBe(96);
    // Sent alone and answered before any other was sent: the server's count, one more than the gate held.
    const alone = await g.acquire();
    expect(g.state().tokens).toBe(95);
    answer(alone, 96);
    expect(g.state().tokens).toBe(96);
    // Sent while another was on its way: its answer only ever lowers them.
    const [fifth, sixth] = [await g.acquire(), await g.acquire()];
    answer(sixth, 100);
    expect(g.state().tokens).toBe(94);
    answer(fifth, 94);
  });

  it('pauses the whole gate after a 429 until the later of reset and Retry-After', async () => {
    const { g, clock } = gate({ jitterMs: 50, random: () => 0.5 });
    const [t0] = await admitTimes(g, clock, 1);
    const p = await g.acquire();
    g.release(p, { status: 429, headers: headers(clock, { remaining: 0, resetAt: clock.now() + 3_000, retryAfterS: 1 }) });
    const state = g.state();
    expect(state.rateLimited).toBe(1);
    const pausedUntil = state.pausedUntil!;
    // Reset is 3 s away (rounded up to the whole second), Retry-After 1 s: the later wins, plus jitter.
    expect(pausedUntil).toBeGreaterThanOrEqual(t0! + 3_000);
    expect(pausedUntil).toBeLessThanOrEqual(t0! + 4_000 + 50);
    const next = g.acquire('high');
    await clock.advance(pausedUntil - clock.now() - 1);
    let admitted = false;
    void next.then(() => (admitted = true));
    await clock.advance(0);
    expect(admitted).toBe(false);
    await clock.advance(1_000);
    expect(admitted).toBe(true);
    expect(clock.now()).toBeGreaterThanOrEqual(pausedUntil);
  });

  it('corrects reset times for a server clock that is off by more than the Date resolution', async () => {
    const { g, clock } = gate();
    await admitTimes(g, clock, 1);
    const p = await g.acquire();
    const skew = 30_000; // the server's clock is 30 s ahead
    g.release(p, {
      status: 429,
      headers: headers(clock, { resetAt: clock.now() + skew + 2_000, date: clock.now() + skew }),
    });
    const wait = g.state().pausedUntil! - clock.now();
    expect(wait).toBeGreaterThanOrEqual(1_000);
    expect(wait).toBeLessThanOrEqual(3_000);
  });

  it('clamps absurd or missing pause headers to the fallback, doubling for 429s in a row', async () => {
    const { g, clock } = gate({ fallbackPauseMs: 500, maxPauseMs: 60_000 });
    await admitTimes(g, clock, 1);
    const absurd = await g.acquire();
    g.release(absurd, { status: 429, headers: { 'x-ratelimit-reset': String(Date.UTC(2100, 0, 1) / 1000), 'retry-after': 'soon' } });
    expect(g.state().pausedUntil! - clock.now()).toBe(500);
    await clock.advance(500);
    const again = g.acquire();
    await clock.advance(0);
    g.release(await again, { status: 429, headers: {} });
    expect(g.state().pausedUntil! - clock.now()).toBe(1_000);
    await clock.advance(1_000);
    const ok = g.acquire();
    await clock.runAll();
    g.release(await ok, { status: 200, headers: {} });
    const later = g.acquire();
    await clock.runAll();
    g.release(await later, { status: 429, headers: { 'retry-after': '-5' } });
    expect(g.state().pausedUntil! - clock.now()).toBe(500);
  });

  it('admits high-priority work before low-priority work queued earlier', async () => {
    const { g, clock } = gate({ burst: 1, limit: 10 });
    await admitTimes(g, clock, 1);
    const order: string[] = [];
    const track = (name: string, p: Promise<Permit>) =>
      p.then((permit) => {
        order.push(name);
        g.release(permit, { status: 200, headers: {} });
      });
    const all = [track('low-1', g.acquire('low')), track('low-2', g.acquire('low')), track('low-3', g.acquire('low')), track('high-1', g.acquire('high')), track('high-2', g.acquire('high'))];
    await clock.runAll();
    await Promise.all(all);
    // low-1 was already waiting for a token when the high requests arrived; every other slot goes to high first.
    expect(order).toEqual(['low-1', 'high-1', 'high-2', 'low-2', 'low-3']);
  });

  it('reports its state for status and logs', async () => {
    const { g, clock } = gate({ name: 'key:abcd1234' });
    await admitTimes(g, clock, 2, () => headers(clock, { limit: 10, remaining: 7, resetAt: clock.now() + 500 }));
    const pending = g.acquire();
    const s = g.state();
    expect(s).toMatchObject({ name: 'key:abcd1234', limit: 10, burst: 5, windowMs: WINDOW, sent: 3, inFlight: 1, rateLimited: 0 });
    expect(s.remaining).toBe(6);
    expect(s.resetAt).toBeGreaterThan(clock.now());
    g.release(await pending);
  });

  it('gives up waiting when the caller aborts', async () => {
    const { g, clock } = gate({ burst: 1 });
    await admitTimes(g, clock, 1);
    const controller = new AbortController();
    const waiting = g.acquire('normal', controller.signal);
    controller.abort(new Error('shutting down'));
    await expect(waiting).rejects.toThrow('shutting down');
  });
});

describe('RateGate with a shared budget', () => {
  it('a caller that aborts while its shared take is on its way loses nothing: the permit admitted after it goes back, and the take is ended', async () => {
    const observed: SharedObservation[] = [];
    let answer: (take: { waitMs: number; seq: number }) => void = () => {};
    let seq = 0;
    const shared: SharedBudget = {
      take: () => new Promise((resolve) => (answer = resolve)),
      observe: (o) => observed.push(o),
      state: () => ({ mode: 'shared', limit: 100, burst: 100, tokens: 100, processes: [], share: 2 }),
    };
    const gate = new RateGate({ limit: 100, burst: 100, windowMs: 60_000, clock: new ManualClock(), shared });
    const settled = () => new Promise((resolve) => setImmediate(resolve));
    const controller = new AbortController();
    const aborted = gate.acquire('normal', controller.signal);
    await settled();
    controller.abort(new Error('shutting down'));
    await expect(aborted).rejects.toThrow('shutting down');
    // The shared budget grants the take after the caller has gone.
    answer({ waitMs: 0, seq: ++seq });
    await settled();
    expect(gate.state().inFlight).toBe(0);
    expect(observed.map((o) => [o.seq, o.remaining])).toEqual([[1, undefined]]);
    // Nothing waits on a request that was never sent: the next one is admitted (no response has informed the gate yet).
    const next = gate.acquire();
    await settled();
    answer({ waitMs: 0, seq: ++seq });
    await expect(next).resolves.toMatchObject({ sharedSeq: 2, concurrency: 1 });
  });

  it('a caller that aborts while its shared take is on its way is not slept for when the take says to wait', async () => {
    let answer: (take: { waitMs: number; seq: undefined }) => void = () => {};
    const shared: SharedBudget = {
      take: () => new Promise((resolve) => (answer = resolve)),
      observe: () => {},
      state: () => ({ mode: 'shared', limit: 100, burst: 100, tokens: 100, processes: [], share: 2 }),
    };
    const clock = new ManualClock();
    const gate = new RateGate({ limit: 100, burst: 100, windowMs: 60_000, clock, shared });
    const controller = new AbortController();
    const aborted = gate.acquire('normal', controller.signal);
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort(new Error('shutting down'));
    await expect(aborted).rejects.toThrow('shutting down');
    answer({ waitMs: 30_000, seq: undefined });
    await new Promise((resolve) => setImmediate(resolve));
    expect(clock.pending).toBe(0);
  });

  it('tells the shared budget how much work waits behind a take, whatever the server', async () => {
    const waitingSeen = async (serverModel: 'bucket' | 'window') => {
      const clock = new ManualClock(Date.UTC(2026, 10, 22, 10, 0, 0));
      const views: LocalView[] = [];
      const shared: SharedBudget = {
        take: async (_priority, view) => {
          views.push(view);
          return { waitMs: 0, seq: views.length };
        },
        observe: () => {},
        state: () => ({ mode: 'shared', limit: 100, burst: 100, tokens: 100, processes: [], share: 2 }),
      };
      const gate = new RateGate({
        limit: 100,
        burst: 100,
        windowMs: 60_000,
        clock,
        shared,
        seed: { limit: 100, remaining: 100, resetAt: serverModel === 'window' ? clock.now() + 30_000 : undefined, pausedUntil: undefined, serverModel, at: clock.now() },
      });
      // Each request answered at once, with the headers that tell the gate it is informed.
      const headers = { 'x-ratelimit-limit': '100', 'x-ratelimit-remaining': '90' };
      await Promise.all(Array.from({ length: 5 }, () => gate.acquire('normal').then((p) => gate.release(p, { status: 200, headers }))));
      return views.map((v) => v.waiting);
    };
    // The requests queued behind each take (the first one starts before the others are queued).
    expect(await waitingSeen('bucket')).toEqual([0, 3, 2, 1, 0]);
    expect(await waitingSeen('window')).toEqual([0, 3, 2, 1, 0]);
  });

  it('tells the shared budget when each of its takes ended, with news or without (no headers, a network error)', async () => {
    const observed: SharedObservation[] = [];
    let seq = 0;
    const shared: SharedBudget = {
      take: async () => ({ waitMs: 0, seq: ++seq }),
      observe: (o) => observed.push(o),
      state: () => ({ mode: 'shared', limit: 100, burst: 100, tokens: 100, processes: [], share: 2 }),
    };
    const gate = new RateGate({ limit: 100, burst: 100, windowMs: 60_000, clock: new ManualClock(), shared });
    const first = await gate.acquire();
    gate.release(first, { status: 200, headers: { 'x-ratelimit-limit': '100', 'x-ratelimit-remaining': '90' } });
    const second = await gate.acquire();
    gate.release(second, { status: 200, headers: {} });
    const third = await gate.acquire();
    gate.release(third);
    expect(observed.map((o) => [o.seq, o.remaining])).toEqual([
      [1, 90],
      [2, undefined],
      [3, undefined],
    ]);
  });
});
