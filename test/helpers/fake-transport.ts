import { AxiosHeaders, type AxiosAdapter, type AxiosResponse, type InternalAxiosRequestConfig } from 'axios';
import type { Clock } from '../../src/core/index.ts';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, unknown>;
  body: unknown;
  authorization: string | undefined;
  at: number;
}

export interface FakeResponse {
  status?: number;
  /** An object is sent as JSON; a string is sent as it is. */
  body: unknown;
  headers?: Record<string, string>;
}

/**
 * An axios adapter standing in for the network: it records every request it receives (with
 * the time on the test's clock) and answers from `handler`.
 */
export function fakeTransport(handler: (req: RecordedRequest, n: number) => FakeResponse | Promise<FakeResponse>, clock?: Clock) {
  const log: RecordedRequest[] = [];
  const adapter: AxiosAdapter = async (config: InternalAxiosRequestConfig): Promise<AxiosResponse> => {
    const auth = config.headers.get('Authorization');
    const req: RecordedRequest = {
      method: (config.method ?? 'get').toUpperCase(),
      path: config.url ?? '',
      query: { ...(config.params as Record<string, unknown>) },
      body: typeof config.data === 'string' ? JSON.parse(config.data) : config.data,
      authorization: typeof auth === 'string' ? auth : undefined,
      at: clock ? clock.now() : Date.now(),
    };
    log.push(req);
    const res = await handler(req, log.length);
    return {
      data: typeof res.body === 'string' ? res.body : JSON.stringify(res.body),
      status: res.status ?? 200,
      statusText: '',
      headers: AxiosHeaders.from({ 'content-type': 'application/json', ...res.headers }),
      config,
      request: {},
    };
  };
  return { adapter, log };
}

export const envelope = (data: unknown, extraMeta: Record<string, unknown> = {}) => ({
  success: true,
  data,
  meta: { timestamp: '2026-11-22T10:00:00.000Z', request_id: 'req_test', ...extraMeta },
});

export const errorBody = (code: string, message: string, extra: Record<string, unknown> = {}) => ({
  success: false,
  error: { code, message, ...extra },
  meta: { timestamp: '2026-11-22T10:00:00.000Z', request_id: 'req_err' },
});

/** A logger that keeps every line it is given, as JSON text, for searching. */
export function captureLogger() {
  const lines: string[] = [];
  const make = (bindings: Record<string, unknown>): import('../../src/core/index.ts').Logger => {
    const at = (level: string) => (obj: object, msg?: string) => {
      lines.push(JSON.stringify({ level, ...bindings, ...obj, msg }));
    };
    return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (b) => make({ ...bindings, ...b }) };
  };
  return { logger: make({}), lines };
}
