import { ConfigError } from '../core/errors.ts';

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
