import { MAX_TIMER_MS } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import type { OptionRange } from '../core/option-range.ts';

/** The seed spec's tiers. Enterprise limits are custom, so they come from config. */
export type Tier = 'public' | 'standard' | 'basic' | 'premium' | 'enterprise';

export const TIERS: readonly Tier[] = ['public', 'standard', 'basic', 'premium', 'enterprise'];

export interface TierLimits {
  /** Requests per minute (per window). */
  limit: number;
  /** Largest burst the server accepts at once. */
  burst: number;
}

export const TIER_LIMITS: Readonly<Record<Exclude<Tier, 'enterprise'>, TierLimits>> = {
  public: { limit: 60, burst: 100 },
  standard: { limit: 120, burst: 200 },
  basic: { limit: 300, burst: 500 },
  premium: { limit: 1000, burst: 1500 },
};

export function tierLimits(tier: Tier, enterprise?: TierLimits): TierLimits {
  if (tier === 'enterprise') {
    if (!enterprise) throw new ConfigError('the enterprise tier needs "enterpriseLimits" { limit, burst } in the config');
    return enterprise;
  }
  return TIER_LIMITS[tier];
}

/** The ranges of the client's numeric options; the config's rate window and enterprise limits share them (so the config need not load the client for them). */
export const CLIENT_RANGES = {
  windowMs: { min: 1, max: 3_600_000 },
  requestsPerWindow: { min: 1, max: 10_000_000 },
  timeoutMs: { min: 1, max: MAX_TIMER_MS },
  retries: { min: 0, max: 100 },
  delayMs: { min: 0, max: MAX_TIMER_MS },
  maxRateLimitRequeues: { min: 0, max: 1_000 },
  pageSize: { min: 1, max: 100 },
} as const satisfies Record<string, OptionRange>;
