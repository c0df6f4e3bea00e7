/** `indexbot/sandbox`: the API contract over a simulated market, on 127.0.0.1, for tests and demos. */
export { startSandbox, demoKey, type Sandbox, type SandboxOptions, type SandboxCounters, type ApiKeySpec, type KeyTier } from '../sandbox/index.ts';
