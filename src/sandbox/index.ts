export { startSandbox, demoKey, type Sandbox, type SandboxOptions, type SandboxCounters } from './server.ts';
export type { ApiKeySpec, KeyTier } from './auth.ts';
export { MAX_SPEED } from './clock.ts';
export { BucketLimiter, type BucketState } from './rate-limiter.ts';
