export { RateGate, type RateGateOptions, type RateGateSeed, type RateGateState, type Permit, type Priority, type ResponseObservation, type ServerModel } from './rate-gate.ts';
export { type Tier, type TierLimits, TIERS, TIER_LIMITS, tierLimits } from '../contract/index.ts';
export { readRateLimitHeaders, type RateLimitObservation } from './headers.ts';
