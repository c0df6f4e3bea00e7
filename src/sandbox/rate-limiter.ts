import type { TierLimits } from '../contract/index.ts';

export interface RateDecision {
  allowed: boolean;
  headers: Record<string, string>;
}

/** A bucket as the server holds it: what a benchmark measures a client's use of the limit against. */
export interface BucketState {
  /** Tokens it holds now (refilled to now, never above its burst). */
  tokens: number;
  /** Requests it let through, and refused (429), since it was created. */
  allowed: number;
  refused: number;
}

interface Bucket {
  tokens: number;
  at: number;
  limits: TierLimits;
  allowed: number;
  refused: number;
}

/**
 * The contract's model: a token bucket per credential, capacity = burst, refilled at
 * `limit` per window. `X-RateLimit-Reset` is when the bucket is full again.
 */
export class BucketLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number,
    private readonly enabled: boolean,
  ) {}

  take(bucket: string, limits: TierLimits): RateDecision {
    const { limit, burst } = limits;
    const now = this.now();
    const rate = limit / this.windowMs;
    const b = this.buckets.get(bucket) ?? { tokens: burst, at: now, limits, allowed: 0, refused: 0 };
    b.limits = limits;
    this.refill(b, now);
    const allowed = !this.enabled || b.tokens >= 1;
    if (allowed && this.enabled) b.tokens -= 1;
    if (allowed) b.allowed++;
    else b.refused++;
    this.buckets.set(bucket, b);
    const headers: Record<string, string> = {
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': String(Math.max(0, Math.floor(b.tokens))),
      'X-RateLimit-Reset': String(Math.ceil((now + (burst - b.tokens) / rate) / 1000)),
    };
    if (!allowed) headers['Retry-After'] = String(Math.max(1, Math.ceil((1 - b.tokens) / rate / 1000)));
    return { allowed, headers };
  }

  /** The bucket of a credential now; undefined before its first request. */
  state(bucket: string): BucketState | undefined {
    const b = this.buckets.get(bucket);
    if (!b) return undefined;
    this.refill(b, this.now());
    return { tokens: b.tokens, allowed: b.allowed, refused: b.refused };
  }

  private refill(b: Bucket, now: number): void {
    b.tokens = Math.min(b.limits.burst, b.tokens + Math.max(0, now - b.at) * (b.limits.limit / this.windowMs));
    b.at = Math.max(b.at, now);
  }
}
