export { startSandbox, demoKey, type Sandbox, type SandboxOptions, type SandboxCounters } from './server.ts';
export type { ApiKeySpec, KeyTier } from './auth.ts';
export { MAX_SPEED } from './clock.ts';
