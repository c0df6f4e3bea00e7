export * from './schemas.ts';
export { renderSigninMessage, signinMessageMismatch, type SigninMessageFields } from './signin-message.ts';
export { type Tier, type TierLimits, CLIENT_RANGES, TIERS, TIER_LIMITS, tierLimits } from './tiers.ts';
export { hasVersionSegment } from './base-url.ts';
