/** The `/_sandbox` control routes (clock, rebalances, credentials) and the faults they queue. */
import type { ServerResponse } from 'node:http';
import type { SandboxAuth } from './auth.ts';
import { MAX_SPEED, type SimClock } from './clock.ts';
import { SandboxHttpError, badParams } from './errors.ts';
import type { Market } from './market.ts';
import { rebalanceRecord } from './records.ts';
import type { Route } from './routes.ts';
import type { SandboxCounters } from './server.ts';

export interface Fault {
  kind: 'status' | 'malformed' | 'html' | 'delay' | 'exception';
  status: number;
  remaining: number;
  pathPrefix: string;
  delayMs: number;
}

const FAULT_KINDS: Fault['kind'][] = ['status', 'malformed', 'html', 'delay', 'exception'];

export function takeFault(faults: Fault[], path: string): Fault | undefined {
  const fault = faults.find((f) => f.remaining > 0 && path.startsWith(f.pathPrefix));
  if (!fault) return undefined;
  fault.remaining--;
  if (fault.remaining === 0) faults.splice(faults.indexOf(fault), 1);
  return fault;
}

export function injectFault(fault: Fault, res: ServerResponse, headers: Record<string, string>, requestId: string): void {
  const write = (status: number, type: string, body: string) => {
    res.writeHead(status, { ...headers, 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };
  if (fault.kind === 'exception') throw new Error('injected handler exception');
  if (fault.kind === 'malformed') {
    write(200, 'application/json', '{"success": true, "data": {"index_id": ');
    return;
  }
  if (fault.kind === 'html') {
    write(fault.status, 'text/html', '<html><body><h1>502 Bad Gateway</h1></body></html>');
    return;
  }
  if (fault.kind === 'delay') {
    setTimeout(() => write(503, 'application/json', '{}'), fault.delayMs).unref();
    return;
  }
  const body = JSON.stringify({
    success: false,
    error: { code: fault.status === 503 ? 'SERVICE_UNAVAILABLE' : 'INTERNAL_ERROR', message: 'injected fault' },
    meta: { timestamp: new Date().toISOString(), request_id: requestId },
  });
  write(fault.status, 'application/json; charset=utf-8', body);
}

interface ControlDeps {
  market: Market;
  clock: SimClock;
  auth: SandboxAuth;
  counters: () => SandboxCounters;
  faults: Fault[];
}

function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
}

/** Ten simulated years: the most one control call may move the clock or schedule ahead. */
const MAX_CONTROL_SECONDS = 10 * 365 * 86_400;

function numberField(body: unknown, name: string, fallback?: number, max = MAX_CONTROL_SECONDS): number {
  const v = field(body, name) ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > max) throw badParams([{ param: name, issue: `must be a number from 0 to ${max}` }]);
  return v;
}

function stringField(body: unknown, name: string): string {
  const v = field(body, name);
  if (typeof v !== 'string' || v === '') throw badParams([{ param: name, issue: 'required string' }]);
  return v;
}

/** The `/_sandbox` routes: for demos and tests, only with `control: true`. */
export function buildControlRoutes(d: ControlDeps): Route[] {
  const clockState = () => ({ now: new Date(d.clock.now()).toISOString(), speed: d.clock.currentSpeed });
  const indexOf = (body: unknown) => {
    const id = stringField(body, 'index_id');
    const index = d.market.index(id, d.clock.now());
    if (!index) throw new SandboxHttpError(404, 'RESOURCE_NOT_FOUND', `no index ${id}`);
    return index;
  };
  return [
    { method: 'GET', pattern: /^\/counters$/, name: 'counters', access: 'auth', handle: () => ({ data: d.counters() }) },
    { method: 'GET', pattern: /^\/clock$/, name: 'clock', access: 'auth', handle: () => ({ data: clockState() }) },
    {
      method: 'POST',
      pattern: /^\/clock$/,
      name: 'clock',
      access: 'auth',
      handle: (ctx) => {
        if (field(ctx.body, 'advance_seconds') !== undefined) d.clock.advance(numberField(ctx.body, 'advance_seconds') * 1000);
        if (field(ctx.body, 'speed') !== undefined) d.clock.setSpeed(numberField(ctx.body, 'speed', undefined, MAX_SPEED));
        d.market.advance(d.clock.now());
        return { data: clockState() };
      },
    },
    {
      method: 'POST',
      pattern: /^\/rebalance$/,
      name: 'rebalance',
      access: 'auth',
      handle: (ctx) => {
        const index = indexOf(ctx.body);
        const inSeconds = numberField(ctx.body, 'effective_in_seconds', 60);
        const now = d.clock.now();
        return { data: rebalanceRecord(index.trigger(now, inSeconds * 1000), now), status: 201 };
      },
    },
    {
      method: 'POST',
      pattern: /^\/rebalance\/cancel$/,
      name: 'rebalance.cancel',
      access: 'auth',
      handle: (ctx) => {
        const index = indexOf(ctx.body);
        const now = d.clock.now();
        const event = index.cancel(stringField(ctx.body, 'rebalance_id'), now);
        if (!event) throw new SandboxHttpError(404, 'RESOURCE_NOT_FOUND', 'no announced rebalance with that id');
        return { data: rebalanceRecord(event, now) };
      },
    },
    {
      method: 'POST',
      pattern: /^\/expire-token$/,
      name: 'expire-token',
      access: 'auth',
      handle: (ctx) => {
        const accessToken = field(ctx.body, 'access_token');
        const wallet = field(ctx.body, 'wallet');
        const expired = d.auth.expireAccessTokens({
          accessToken: typeof accessToken === 'string' ? accessToken : undefined,
          wallet: typeof wallet === 'string' ? wallet : undefined,
        });
        return { data: { expired } };
      },
    },
    {
      method: 'POST',
      pattern: /^\/revoke-key$/,
      name: 'revoke-key',
      access: 'auth',
      handle: (ctx) => {
        if (!d.auth.revokeKey(stringField(ctx.body, 'key'))) throw new SandboxHttpError(404, 'RESOURCE_NOT_FOUND', 'no such key');
        return { data: { revoked: true } };
      },
    },
    {
      method: 'POST',
      pattern: /^\/faults$/,
      name: 'faults',
      access: 'auth',
      handle: (ctx) => {
        const kind = field(ctx.body, 'kind') ?? 'status';
        if (!FAULT_KINDS.includes(kind as Fault['kind'])) throw badParams([{ param: 'kind', issue: `must be one of ${FAULT_KINDS.join(', ')}` }]);
        const fault: Fault = {
          kind: kind as Fault['kind'],
          status: numberField(ctx.body, 'status', kind === 'html' ? 502 : 503, 599),
          remaining: numberField(ctx.body, 'count', 1, 1_000_000),
          pathPrefix: typeof field(ctx.body, 'path_prefix') === 'string' ? (field(ctx.body, 'path_prefix') as string) : '/',
          delayMs: numberField(ctx.body, 'delay_ms', 0, 600_000),
        };
        if (fault.remaining > 0) d.faults.push(fault);
        return { data: { queued: d.faults.length } };
      },
    },
  ];
}
