import { request as httpRequest } from 'node:http';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.ts';

/** A sandbox on a free loopback port with a frozen clock at a fixed simulated time. */
export const FIXED_TIME = Date.UTC(2026, 10, 20, 10, 0, 0);

export function testSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  return startSandbox({ port: 0, seed: 7, speed: 0, startTime: FIXED_TIME, control: true, ...options });
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** One HTTP request with node:http (no client library in between), for contract tests. */
export function raw(url: string, init: { method?: string; headers?: Record<string, string>; body?: string | Buffer; chunked?: boolean } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...init.headers };
    if (init.body !== undefined && !init.chunked) headers['Content-Length'] = Buffer.byteLength(init.body);
    const req = httpRequest(url, { method: init.method ?? 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    // The server may answer (413) and close before the whole body is written.
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE' && e.code !== 'ECONNRESET') reject(e);
    });
    if (init.body !== undefined) req.write(init.body);
    req.end();
  });
}

export async function control(sandbox: Sandbox, path: string, body?: unknown): Promise<RawResponse> {
  return raw(`${sandbox.origin}/_sandbox${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}
