import PQueue from 'p-queue';
import { type Clock, type Logger, silentLogger, systemClock } from '../core/index.ts';
import { type HeaderBag, type RateLimitObservation, readRateLimitHeaders } from './headers.ts';
import type { SharedBudget, SharedBudgetState } from './shared-budget.ts';

export type Priority = 'high' | 'normal' | 'low';
const PRIORITY_VALUE: Record<Priority, number> = { high: 2, normal: 1, low: 0 };

export interface RateGateOptions {
  /** Requests allowed per window (the tier's rate). */
  limit: number;
  /** Bucket capacity: the most requests sent back to back. */
  burst: number;
  /**
   * Length of the rate window. Tests and benchmarks shorten it, like the sandbox's
   * `--rate-window-ms`.
   * @default 60000
   */
  windowMs?: number | undefined;
  /** @default systemClock */
  clock?: Clock | undefined;
  /** Source of jitter, in [0, 1). @default Math.random */
  random?: (() => number) | undefined;
  /**
   * Longest pause a header can impose; a later reset is treated as absurd and clamped.
   * @default 300000
   */
  maxPauseMs?: number | undefined;
  /**
   * Pause after a 429 that says nothing usable about when to come back; doubles with each
   * further 429 in a row.
   * @default 1000
   */
  fallbackPauseMs?: number | undefined;
  /**
   * Upper bound of the random margin added after a reset, so that many clients do not
   * all come back in the same millisecond.
   * @default 100
   */
  jitterMs?: number | undefined;
  /** A name for logs, e.g. `key:…a1b2` or `public`. @default 'gate' */
  name?: string | undefined;
  /** @default silentLogger */
  logger?: Logger | undefined;
  /**
   * What a previous process last knew of this credential (the state the daemon persists for
   * `status`), so a restart does not open with the tier's whole burst into a spent window.
   */
  seed?: RateGateSeed | undefined;
  /**
   * The credential's budget shared with other processes: a request goes only once both this
   * gate and the shared budget admit it, and what responses say is passed on to it.
   */
  shared?: SharedBudget | undefined;
}

/** The part of a persisted `RateGateState` a new gate starts from, and when it was taken. */
export type RateGateSeed = Pick<RateGateState, 'limit' | 'remaining' | 'resetAt' | 'pausedUntil' | 'serverModel'> & { at: number };

/** How the server refills: a bucket refills continuously, a fixed window only at reset. */
export type ServerModel = 'unknown' | 'bucket' | 'window';

export interface RateGateState {
  name: string;
  /** Requests per window the gate paces to (tightened by the server's headers). */
  limit: number;
  /** The server's last X-RateLimit-Limit: above `limit`, the credential allows more than the configured tier. */
  serverLimit?: number;
  burst: number;
  windowMs: number;
  /** Tokens the gate holds now. */
  tokens: number;
  /** What the server last said was left, minus what was sent since. */
  remaining: number | undefined;
  /** When the server said its window resets (local epoch ms). */
  resetAt: number | undefined;
  pausedUntil: number | undefined;
  queued: number;
  inFlight: number;
  serverModel: ServerModel;
  sent: number;
  rateLimited: number;
  /** The shared budget across processes, when there is one. */
  shared?: SharedBudgetState;
}

export interface Permit {
  readonly seq: number;
  /** Its take from the shared budget, when it came from there. */
  readonly sharedSeq?: number | undefined;
  readonly sharedBorn?: number | undefined;
  /** Requests in flight when this one was admitted (itself included). */
  readonly concurrency: number;
}

export interface ResponseObservation {
  status: number;
  headers: HeaderBag;
}

/**
 * Admits requests for one credential at the pace its tier and the server allow.
 *
 * Admission is a p-queue of concurrency 1 ordered by priority, so high-priority work is
 * always admitted before low; the admitted request then runs freely. Pacing is a local
 * token bucket at the configured rate, tightened by what the server reports: a smaller
 * `X-RateLimit-Limit` lowers the rate, `X-RateLimit-Remaining` caps the tokens, and a
 * server seen to refill only at `X-RateLimit-Reset` (fixed windows) makes the gate wait
 * for the reset once it is spent. A 429 pauses the whole gate until the later of reset
 * and `Retry-After`, plus jitter. Until a response says what is left, only one request is
 * in flight, so a server with a smaller limit than configured, or a window another process
 * already spent, is never flooded; a response without the headers does not count (servers
 * omit them on some answers), unless none has carried them for a whole window.
 */
export class RateGate {
  readonly name: string;
  private limit: number;
  private burst: number;
  private readonly windowMs: number;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly maxPauseMs: number;
  private readonly fallbackPauseMs: number;
  private readonly jitterMs: number;
  private readonly logger: Logger;
  private readonly admission = new PQueue({ concurrency: 1 });

  private tokens: number;
  private lastRefill: number;
  private pausedUntil = 0;
  private admitted = 0;
  private inFlight = 0;
  /** Set once the server told us what is left (`X-RateLimit-Remaining`). */
  private informed = false;
  /** When the first response without rate headers arrived, while not yet informed. */
  private firstBlindResponseAt: number | undefined;
  private consecutive429 = 0;
  private rateLimited = 0;
  private serverModel: ServerModel = 'unknown';
  private serverLimit: number | undefined;
  private lastObserved: { seq: number; remaining: number; resetAt: number | undefined } | undefined;
  private estimatedRemaining: number | undefined;
  private resetAt: number | undefined;
  /** Set when a window the server does not refill before its reset is spent. */
  private windowResumeAt: number | undefined;
  private wakers = new Set<() => void>();
  private readonly shared: SharedBudget | undefined;

  constructor(options: RateGateOptions) {
    const { limit, burst, windowMs = 60_000, maxPauseMs = 300_000, fallbackPauseMs = 1_000, jitterMs = 100 } = options;
    positive('limit', limit);
    positive('burst', burst);
    positive('windowMs', windowMs);
    positive('maxPauseMs', maxPauseMs);
    nonNegative('fallbackPauseMs', fallbackPauseMs);
    nonNegative('jitterMs', jitterMs);
    this.limit = limit;
    this.burst = burst;
    this.windowMs = windowMs;
    this.maxPauseMs = maxPauseMs;
    this.fallbackPauseMs = fallbackPauseMs;
    this.jitterMs = jitterMs;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.name = options.name ?? 'gate';
    this.logger = options.logger ?? silentLogger;
    this.tokens = burst;
    this.lastRefill = this.clock.now();
    this.shared = options.shared;
    if (options.seed) this.applySeed(options.seed);
  }

  /** Waits until a request may be sent. Every call must be followed by one `release()`. */
  async acquire(priority: Priority = 'normal', signal?: AbortSignal): Promise<Permit> {
    let slot: Promise<Permit> | undefined;
    try {
      return await this.admission.add(() => (slot = this.waitForSlot(priority, signal)), { priority: PRIORITY_VALUE[priority], signal });
    } catch (e) {
      // p-queue gives up on a running task when its signal aborts, but the task runs on (a
      // shared take cannot be called back): a permit it still admits was never sent, so it
      // goes back at once, or it would count as in flight for good.
      slot?.then(
        (permit) => this.release(permit),
        () => {},
      );
      throw e;
    }
  }

  /** Reports how the admitted request ended: its response, or nothing (network error). */
  release(permit: Permit, response?: ResponseObservation): void {
    this.inFlight--;
    // A 401's headers are the allowance of no credential of ours (a key refused is counted as
    // anonymous): pacing to them said "server limit is lower" just before the key error.
    const seen = response && response.status !== 401 ? readRateLimitHeaders(response.headers) : {};
    if (response) {
      if (seen.remaining !== undefined) this.informed = true;
      else this.firstBlindResponseAt ??= this.clock.now();
      this.observe(permit, seen);
      if (response.status === 429) this.onRateLimited(seen);
      else this.consecutive429 = 0;
    }
    // The shared budget hears of every take's end, news or not: until then it counts the request as on its way.
    const news = seen.limit !== undefined || seen.remaining !== undefined || response?.status === 429;
    if (this.shared && (news || permit.sharedSeq !== undefined)) this.tellShared(permit, seen, response?.status);
    this.wake();
  }

  state(): RateGateState {
    this.refill();
    const now = this.clock.now();
    return {
      name: this.name,
      limit: this.limit,
      burst: this.burst,
      windowMs: this.windowMs,
      tokens: Math.floor(this.tokens * 1000) / 1000,
      remaining: this.estimatedRemaining,
      resetAt: this.resetAt,
      pausedUntil: Math.max(this.pausedUntil, this.windowResumeAt ?? 0) > now ? Math.max(this.pausedUntil, this.windowResumeAt ?? 0) : undefined,
      queued: this.admission.size + this.admission.pending,
      inFlight: this.inFlight,
      serverModel: this.serverModel,
      ...(this.serverLimit === undefined ? {} : { serverLimit: this.serverLimit }),
      sent: this.admitted,
      rateLimited: this.rateLimited,
      ...(this.shared ? { shared: this.shared.state() } : {}),
    };
  }

  private get ratePerMs(): number {
    return this.limit / this.windowMs;
  }

  private refill(): void {
    const now = this.clock.now();
    if (now > this.lastRefill) {
      this.tokens = Math.min(this.burst, this.tokens + (now - this.lastRefill) * this.ratePerMs);
      this.lastRefill = now;
    }
  }

  /** Milliseconds until the next request may go (or a response wakes it); Infinity means "until a response arrives". */
  private waitTime(): number {
    const now = this.clock.now();
    if (this.pausedUntil > now) return this.pausedUntil - now;
    if (!this.informed && this.inFlight > 0) {
      // A server that sent no rate headers for a whole window does not send them.
      if (this.firstBlindResponseAt === undefined) return Infinity;
      const blindFor = now - this.firstBlindResponseAt;
      if (blindFor < this.windowMs) return this.windowMs - blindFor;
      this.informed = true;
    }
    if (this.windowResumeAt !== undefined) {
      if (now < this.windowResumeAt) return this.windowResumeAt - now;
      // The window has reset: what the server had left no longer applies.
      this.windowResumeAt = undefined;
      this.estimatedRemaining = undefined;
    }
    this.refill();
    if (this.tokens >= 1) return 0;
    return Math.ceil((1 - this.tokens) / this.ratePerMs);
  }

  private async waitForSlot(priority: Priority, signal?: AbortSignal): Promise<Permit> {
    let sharedSeq: number | undefined;
    let sharedBorn: number | undefined;
    for (;;) {
      signal?.throwIfAborted();
      let wait = this.waitTime();
      if (wait === 0 && this.shared) {
        const take = await this.shared.take(priority, this.localView());
        wait = take.waitMs;
        sharedSeq = take.seq;
        sharedBorn = take.born;
      }
      if (wait === 0) break;
      await this.sleepOrWake(wait, signal);
    }
    this.tokens -= 1;
    this.inFlight++;
    if (this.estimatedRemaining !== undefined) {
      this.estimatedRemaining = Math.max(0, this.estimatedRemaining - 1);
      if (this.estimatedRemaining === 0) this.holdUntilReset();
    }
    return { seq: ++this.admitted, concurrency: this.inFlight, sharedSeq, sharedBorn };
  }

  private localView() {
    const now = this.clock.now();
    const window = this.estimatedRemaining !== undefined && this.resetAt !== undefined && this.resetAt > now && this.serverModel !== 'bucket';
    return {
      limit: this.limit,
      burst: this.burst,
      windowMs: this.windowMs,
      remaining: this.estimatedRemaining,
      resetInMs: window ? this.resetAt! - now : undefined,
      waiting: this.admission.size,
    };
  }

  /** Passes on what a response said; every process's gate learns it from the shared budget. */
  private tellShared(permit: Permit, seen: RateLimitObservation, status: number | undefined): void {
    const now = this.clock.now();
    const resetAt = seen.resetAtServerMs === undefined ? undefined : this.toLocal(seen.resetAtServerMs, seen);
    this.shared!.observe({
      seq: permit.sharedSeq,
      born: permit.sharedBorn,
      serverLimit: seen.limit,
      remaining: seen.remaining,
      resetInMs: resetAt !== undefined && resetAt > now && resetAt - now <= this.maxPauseMs ? resetAt - now : undefined,
      serverModel: this.serverModel,
      pauseMs: status === 429 && this.pausedUntil > now ? this.pausedUntil - now : undefined,
    });
  }

  private sleepOrWake(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let handle: unknown;
      const done = () => {
        this.wakers.delete(done);
        signal?.removeEventListener('abort', onAbort);
        if (handle !== undefined) this.clock.clearTimeout(handle);
        resolve();
      };
      const onAbort = () => {
        done();
        reject(signal?.reason);
      };
      // The signal may have aborted while a shared take was on its way: the event has fired already.
      if (signal?.aborted) return onAbort();
      this.wakers.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (Number.isFinite(ms)) handle = this.clock.setTimeout(done, ms);
    });
  }

  private wake(): void {
    for (const w of [...this.wakers]) w();
  }

  /**
   * Starts from what a previous process last saw: a smaller limit, a pause, and what was left
   * of a window that has not reset yet (a bucket has refilled since, at the known rate).
   */
  private applySeed(seed: RateGateSeed): void {
    const now = this.clock.now();
    if (seed.limit > 0 && seed.limit < this.limit) {
      this.limit = seed.limit;
      this.burst = Math.min(this.burst, seed.limit);
      this.tokens = this.burst;
    }
    this.serverModel = seed.serverModel;
    if (seed.pausedUntil !== undefined && seed.pausedUntil > now) this.pauseUntil(Math.min(seed.pausedUntil, now + this.maxPauseMs), 'paused when the last process stopped');
    if (seed.remaining === undefined) return;
    if (seed.serverModel === 'bucket') {
      this.tokens = Math.min(this.tokens, seed.remaining + Math.max(0, now - seed.at) * this.ratePerMs);
      return;
    }
    if (seed.resetAt === undefined || seed.resetAt <= now || seed.resetAt - now > this.maxPauseMs) return;
    this.resetAt = seed.resetAt;
    this.estimatedRemaining = seed.remaining;
    this.tokens = Math.min(this.tokens, seed.remaining);
    if (seed.remaining === 0) this.holdUntilReset();
  }

  /** Local epoch ms of a server time, correcting clock skew bigger than `Date`'s 1 s resolution. */
  private toLocal(serverMs: number, seen: RateLimitObservation): number {
    const now = this.clock.now();
    const skew = seen.serverDateMs === undefined ? 0 : seen.serverDateMs - now;
    return Math.abs(skew) > 2_000 ? serverMs - skew : serverMs;
  }

  private observe(permit: Permit, seen: RateLimitObservation): void {
    const now = this.clock.now();
    if (seen.limit !== undefined) this.serverLimit = seen.limit;
    if (seen.limit !== undefined && seen.limit < this.limit) {
      this.logger.info({ gate: this.name, configured: this.limit, server: seen.limit }, 'server limit is lower than configured; pacing to it');
      this.limit = seen.limit;
      this.burst = Math.min(this.burst, seen.limit);
      this.tokens = Math.min(this.tokens, this.burst);
    }
    const resetAt = seen.resetAtServerMs === undefined ? undefined : this.toLocal(seen.resetAtServerMs, seen);
    // A fixed window never resets more than one window ahead; a bucket refilling to its burst can.
    const plausible = resetAt !== undefined && resetAt - now <= this.maxPauseMs;
    if (plausible && resetAt - now > this.windowMs + 1_000) this.serverModel = 'bucket';
    if (seen.remaining === undefined) return;
    const last = this.lastObserved;
    // Responses arrive out of order; only one admitted later than the last one used is news.
    if (last && permit.seq <= last.seq) return;
    if (last) {
      // Concurrent requests may be served in another order than admitted, which looks like
      // refill by up to the number that were in flight; only more than that shows a refill.
      const expectedWithoutRefill = last.remaining - (permit.seq - last.seq) + permit.concurrency;
      const resetPassed = last.resetAt !== undefined && now >= last.resetAt;
      if (seen.remaining > expectedWithoutRefill && !resetPassed) this.serverModel = 'bucket';
      else if (seen.remaining > expectedWithoutRefill && this.serverModel === 'unknown') this.serverModel = 'window';
    }
    this.lastObserved = { seq: permit.seq, remaining: seen.remaining, resetAt };
    this.resetAt = resetAt;
    // Requests admitted after this one were not yet counted in its `Remaining`.
    const estimate = Math.max(0, seen.remaining - (this.admitted - permit.seq));
    this.estimatedRemaining = estimate;
    this.refill();
    // Sent alone and answered before another was sent: the server's count of a bucket is the
    // tokens, and raises them where answers served out of order left them low.
    const exact = this.serverModel === 'bucket' && permit.concurrency === 1 && this.admitted === permit.seq;
    this.tokens = exact ? Math.min(this.burst, estimate) : Math.min(this.tokens, estimate);
    if (estimate === 0) this.holdUntilReset();
    else if (this.serverModel === 'bucket' || (resetAt !== undefined && now >= resetAt)) this.windowResumeAt = undefined;
  }

  /**
   * The server's budget is spent. A bucket refills as we wait, which local pacing already
   * models; anything else may refill only at its reset, so nothing goes until then.
   */
  private holdUntilReset(): void {
    if (this.serverModel === 'bucket' || this.resetAt === undefined || this.windowResumeAt !== undefined) return;
    this.windowResumeAt = this.resetAt + this.jitter();
    this.logger.debug({ gate: this.name, until: new Date(this.windowResumeAt).toISOString() }, 'server window spent; waiting for its reset');
  }

  private onRateLimited(seen: RateLimitObservation): void {
    this.rateLimited++;
    this.consecutive429++;
    const now = this.clock.now();
    const candidates: number[] = [];
    if (seen.resetAtServerMs !== undefined) candidates.push(this.toLocal(seen.resetAtServerMs, seen));
    if (seen.retryAfterMs !== undefined) candidates.push(now + seen.retryAfterMs);
    const usable = candidates.filter((t) => t >= now - this.windowMs && t <= now + this.maxPauseMs);
    const until = usable.length > 0 ? Math.max(...usable) : now + Math.min(this.maxPauseMs, this.fallbackPauseMs * 2 ** Math.min(10, this.consecutive429 - 1));
    this.tokens = 0;
    this.lastRefill = now;
    this.pauseUntil(Math.min(now + this.maxPauseMs, Math.max(now, until) + this.jitter()), '429 received');
  }

  private pauseUntil(at: number, why: string): void {
    if (at <= this.pausedUntil) return;
    this.pausedUntil = at;
    this.logger.debug({ gate: this.name, pausedUntil: new Date(at).toISOString(), why }, 'rate gate paused');
  }

  private jitter(): number {
    return Math.floor(this.random() * this.jitterMs);
  }
}

function positive(name: string, value: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`Expected \`${name}\` to be a positive finite number, got \`${String(value)}\` (${typeof value})`);
  }
}

function nonNegative(name: string, value: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`Expected \`${name}\` to be a non-negative finite number, got \`${String(value)}\` (${typeof value})`);
  }
}
