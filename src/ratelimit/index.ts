export { RateGate, type RateGateOptions, type RateGateSeed, type RateGateState, type Permit, type Priority, type ResponseObservation, type ServerModel } from './rate-gate.ts';
export { type Tier, type TierLimits, TIERS, TIER_LIMITS, tierLimits } from '../contract/index.ts';
export { readRateLimitHeaders, type RateLimitObservation } from './headers.ts';
export type { LocalView, SharedBudget, SharedBudgetState, SharedObservation, SharedTake } from './shared-budget.ts';
export { RedisBudgets, type RedisBudgetsOptions, budgetKeys, credentialDigest } from './redis-budget.ts';
