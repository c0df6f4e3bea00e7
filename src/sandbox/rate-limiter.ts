import type { TierLimits } from '../contract/index.ts';

export interface RateDecision {
  allowed: boolean;
  headers: Record<string, string>;
}

/**
 * The contract's model: a token bucket per credential, capacity = burst, refilled at
 * `limit` per window. `X-RateLimit-Reset` is when the bucket is full again.
 */
export class BucketLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number,
    private readonly enabled: boolean,
  ) {}

  take(bucket: string, { limit, burst }: TierLimits): RateDecision {
    const now = this.now();
    const rate = limit / this.windowMs;
    const b = this.buckets.get(bucket) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + (now - b.at) * rate);
    b.at = now;
    const allowed = !this.enabled || b.tokens >= 1;
    if (allowed && this.enabled) b.tokens -= 1;
    this.buckets.set(bucket, b);
    const headers: Record<string, string> = {
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': String(Math.max(0, Math.floor(b.tokens))),
      'X-RateLimit-Reset': String(Math.ceil((now + (burst - b.tokens) / rate) / 1000)),
    };
    if (!allowed) headers['Retry-After'] = String(Math.max(1, Math.ceil((1 - b.tokens) / rate / 1000)));
    return { allowed, headers };
  }
}
