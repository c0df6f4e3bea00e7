import { describe, expectTypeOf, it } from 'vitest';
import { type Sandbox, type SandboxOptions, startSandbox } from 'indexbot/sandbox';

describe('indexbot/sandbox', () => {
  it('starts a sandbox whose base URL and keys a client uses', () => {
    expectTypeOf(startSandbox).parameter(0).toEqualTypeOf<SandboxOptions | undefined>();
    expectTypeOf(startSandbox).returns.resolves.toEqualTypeOf<Sandbox>();
    expectTypeOf<Sandbox['baseUrl']>().toEqualTypeOf<string>();
    expectTypeOf<Sandbox['close']>().returns.resolves.toBeVoid();
  });
});
