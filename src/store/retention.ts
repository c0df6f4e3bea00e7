import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { type Clock, type Logger, silentLogger, systemClock } from '../core/index.ts';
import { failureFields } from './sqlite-errors.ts';
import type { SnapshotStore } from './snapshot-store.ts';

export interface RetentionOptions {
  store: SnapshotStore;
  /** Snapshots, finished outbox rows, performance points and passed performance events older than this many days are deleted. */
  days: number;
  /** @default 3600000 (hourly) */
  everyMs?: number;
  /** Rows per transaction: small, so polls and strategies never wait long. @default 2000 */
  batch?: number;
  /** @default systemClock */
  clock?: Clock;
  /** @default silentLogger */
  logger?: Logger;
}

/** Rows deleted by one pass, by kind. */
export interface RetentionPass {
  snapshots: number;
  outbox: number;
  performanceEvents: number;
  performancePoints: number;
}

/**
 * Keeps a bot that runs for months within a small disk: raw snapshots (and the composition
 * rows they hold), finished outbox rows, performance points and the `performance.updated`
 * events every consumer has passed are deleted past the retention age, in small batches,
 * and SQLite reuses the freed pages, so the file stops growing. Rebalance and index events,
 * rebalances, history, fills and strategy alerts are kept.
 */
export class RetentionJob {
  private readonly everyMs: number;
  private readonly batch: number;
  private readonly clock: Clock;
  private readonly log: Logger;
  private timer: unknown;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly o: RetentionOptions) {
    if (!Number.isFinite(o.days) || o.days <= 0) throw new TypeError(`Expected \`days\` to be a number > 0, got \`${String(o.days)}\``);
    this.everyMs = o.everyMs ?? 3_600_000;
    this.batch = o.batch ?? 2_000;
    this.clock = o.clock ?? systemClock;
    this.log = o.logger ?? silentLogger;
  }

  /** Prunes now, then every `everyMs`. */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One pass; returns what it deleted. */
  async runOnce(): Promise<RetentionPass> {
    const cutoff = this.clock.now() - this.o.days * 86_400_000;
    const { store } = this.o;
    const done: RetentionPass = { snapshots: 0, outbox: 0, performanceEvents: 0, performancePoints: 0 };
    for (const [key, prune] of [
      ['snapshots', (n: number) => store.pruneSnapshots(cutoff, n)],
      ['outbox', (n: number) => store.pruneOutbox(cutoff, n)],
      ['performanceEvents', (n: number) => store.prunePerformanceEvents(cutoff, n)],
      ['performancePoints', (n: number) => store.prunePerformancePoints(cutoff, n)],
    ] as const) {
      for (let n = this.batch; n === this.batch && !this.stopped; ) {
        n = prune(this.batch);
        done[key] += n;
        await yieldToLoop();
      }
    }
    if (Object.values(done).some((n) => n > 0)) this.log.info({ ...done, olderThanDays: this.o.days }, 'pruned old snapshots, alert rows and performance data');
    return done;
  }

  private schedule(delayMs: number): void {
    this.timer = this.clock.setTimeout(() => {
      this.running = this.runOnce()
        .then(
          () => undefined,
          (e: unknown) => this.log.warn({ error: failureFields(e) }, 'pruning failed; trying again at the next round'),
        )
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.schedule(this.everyMs);
        });
    }, delayMs);
  }
}
