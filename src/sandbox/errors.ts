/** An error the sandbox answers with its envelope; anything else thrown in a handler becomes a 500. */
export class SandboxHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: { reason?: string; details?: { param: string; issue: string }[]; headers?: Record<string, string> } = {},
  ) {
    super(message);
  }
}

export const badParams = (details: { param: string; issue: string }[]) =>
  new SandboxHttpError(400, 'INVALID_PARAMETER', `invalid parameter${details.length > 1 ? 's' : ''}: ${details.map((d) => d.param).join(', ')}`, { details });

export const unauthorized = (reason: string, message: string, headers?: Record<string, string>) => new SandboxHttpError(401, 'UNAUTHORIZED', message, { reason, headers });
