export { startSandbox, demoKey, type Sandbox, type SandboxOptions, type SandboxCounters } from './server.ts';
export { type ApiKeySpec, type KeyTier } from './auth.ts';
