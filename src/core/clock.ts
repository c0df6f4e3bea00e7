/**
 * Time as a dependency. Everything that paces, backs off or expires takes a `Clock`, so
 * tests drive it with a `ManualClock` in microseconds of real time, and a backtest can run
 * the same code on simulated time.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Node's timers hold at most 2^31-1 ms (about 24.8 days); a longer delay fires after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Resolves after `ms` on `clock`; rejects with the signal's reason if aborted first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

interface PendingTimer {
  id: number;
  at: number;
  fn: () => void;
}

/**
 * A clock that moves only when told. `advance()` fires due timers in time order and lets
 * the promise callbacks they trigger run before the next one, so async code that sleeps on
 * this clock behaves as it would in real time.
 */
export class ManualClock implements Clock {
  private current: number;
  private nextId = 1;
  private timers: PendingTimer[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer = { id: this.nextId++, at: this.current + Math.max(0, ms), fn };
    this.timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  /** Number of timers not yet fired. */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await flushMicrotasks();
    for (;;) {
      const due = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.current = Math.max(this.current, due.at);
      due.fn();
      await flushMicrotasks();
    }
    this.current = target;
    await flushMicrotasks();
  }

  /**
   * Moves time forward, timer by timer, until `promise` settles: for async code whose
   * timers are only created after some I/O, which `runAll` would not wait for.
   */
  async settle<T>(promise: Promise<T>, limitMs = 3_600_000): Promise<T> {
    let done = false;
    const watched = promise.finally(() => {
      done = true;
    });
    watched.catch(() => undefined);
    const end = this.current + limitMs;
    while (!done) {
      await flushMicrotasks();
      if (done) break;
      if (this.timers.length === 0) continue;
      const next = Math.min(...this.timers.map((t) => t.at));
      if (next > end) throw new Error(`ManualClock.settle: nothing settled within ${limitMs} ms of clock time`);
      await this.advance(Math.max(0, next - this.current));
    }
    return watched;
  }

  /** Runs timers until none is left (or `limitMs` of clock time has passed). */
  async runAll(limitMs = 3_600_000): Promise<void> {
    const end = this.current + limitMs;
    while (this.timers.length > 0) {
      const next = Math.min(...this.timers.map((t) => t.at));
      if (next > end) break;
      await this.advance(Math.max(0, next - this.current));
    }
  }
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise<void>((resolve) => setImmediate(resolve));
}
