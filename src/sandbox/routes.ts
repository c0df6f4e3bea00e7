/** The API's routes over the simulated market, and who may call them. */
import { HISTORY_INTERVALS, REBALANCE_STATUSES } from '../contract/index.ts';
import type { Principal, SandboxAuth } from './auth.ts';
import { SandboxHttpError } from './errors.ts';
import { DAY, HOUR, type Market } from './market.ts';
import type { QueryReader } from './query.ts';
import { compositionRecord, historyPoint, historyTimes, indexRecord, performanceRecord, portfolioRecord, rebalanceRecord, tokenRecord, visibleRebalances } from './records.ts';

export interface Ctx {
  query: QueryReader;
  params: string[];
  principal: Principal | undefined;
  body: unknown;
  now: number;
}

export type Result = { data: unknown; pagination?: { page: number; limit: number; total: number }; status?: number };

export interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  name: string;
  /** `public`: no credential needed (one given must be valid); `user`: a credential with the permission. */
  access: 'public' | 'user' | 'auth';
  permission?: string;
  handle(ctx: Ctx): Result | Promise<Result>;
}

const ID = '([a-z0-9][a-z0-9-]{0,63})';

export function match(routes: Route[], method: string | undefined, path: string): { route: Route; params: string[] } | undefined {
  for (const route of routes) {
    const m = route.pattern.exec(path);
    if (m && route.method === method) return { route, params: m.slice(1) };
  }
  return undefined;
}

export function authorize(route: Route, principal: Principal | undefined, path: string): void {
  if (route.access === 'auth') return;
  if (!principal) {
    if (route.access === 'public') return;
    throw new SandboxHttpError(401, 'INVALID_API_KEY', 'this endpoint needs an API key or an access token', { reason: 'missing_credentials' });
  }
  if (route.permission && !principal.permissions.includes(route.permission)) {
    throw new SandboxHttpError(403, 'FORBIDDEN', `the credential lacks the permission ${route.permission}`);
  }
  if (principal.scopes && !principal.scopes.some((s) => globMatch(s, path))) {
    throw new SandboxHttpError(403, 'FORBIDDEN', 'the credential is not scoped to this endpoint');
  }
}

function globMatch(pattern: string, path: string): boolean {
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return re.test(path);
}

function paged<T>(query: QueryReader, total: number, item: (i: number) => T): Result {
  const { offset, page, limit } = query.paging();
  query.done();
  const end = Math.min(total, offset + limit);
  const data: T[] = [];
  for (let i = offset; i < end; i++) data.push(item(i));
  return { data, pagination: { page, limit, total } };
}

export function buildRoutes(market: Market, auth: SandboxAuth): Route[] {
  const indexAt = (ctx: Ctx) => {
    market.advance(ctx.now);
    const index = market.index(ctx.params[0]!, ctx.now);
    if (!index) throw new SandboxHttpError(404, 'RESOURCE_NOT_FOUND', `no index ${ctx.params[0]}`);
    return index;
  };
  const noQuery = (ctx: Ctx) => ctx.query.done();
  return [
    {
      method: 'GET',
      pattern: /^\/indexes$/,
      name: 'GET /indexes',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => {
        market.advance(ctx.now);
        const listed = market.listed(ctx.now);
        return paged(ctx.query, listed.length, (i) => indexRecord(market, listed[i]!, ctx.now, false));
      },
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/indexes/${ID}$`),
      name: 'GET /indexes/{id}',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => {
        noQuery(ctx);
        return { data: indexRecord(market, indexAt(ctx), ctx.now, true) };
      },
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/indexes/${ID}/composition$`),
      name: 'GET /indexes/{id}/composition',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => ({ data: compositionRecord(market, indexAt(ctx), ctx.now) }),
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/indexes/${ID}/performance$`),
      name: 'GET /indexes/{id}/performance',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => ({ data: performanceRecord(indexAt(ctx), ctx.now) }),
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/indexes/${ID}/history$`),
      name: 'GET /indexes/{id}/history',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => {
        const index = indexAt(ctx);
        const q = ctx.query;
        const to = q.timestamp('to') ?? ctx.now;
        const from = q.timestamp('from') ?? to - 30 * DAY;
        const interval = q.oneOf('interval', HISTORY_INTERVALS) ?? '1d';
        if (q.issues.length === 0 && from > to) q.issues.push({ param: 'from', issue: 'must not be after to' });
        const step = interval === '1h' ? HOUR : DAY;
        const { first, count } = historyTimes(index, from, to, step, ctx.now);
        return paged(q, count, (i) => historyPoint(market, index, first + i * step));
      },
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/indexes/${ID}/rebalancing$`),
      name: 'GET /indexes/{id}/rebalancing',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => {
        const index = indexAt(ctx);
        const q = ctx.query;
        const status = q.oneOf('status', REBALANCE_STATUSES);
        const from = q.timestamp('from');
        const to = q.timestamp('to');
        if (from !== undefined && to !== undefined && from > to) q.issues.push({ param: 'from', issue: 'must not be after to' });
        const records = visibleRebalances(index, ctx.now)
          .filter((e) => (from === undefined || e.announcedAt >= from) && (to === undefined || e.announcedAt <= to))
          .map((e) => rebalanceRecord(e, ctx.now))
          .filter((r) => status === undefined || r.status === status);
        return paged(q, records.length, (i) => records[i]);
      },
    },
    {
      method: 'GET',
      pattern: /^\/tokens$/,
      name: 'GET /tokens',
      access: 'public',
      permission: 'read:index',
      handle: (ctx) => paged(ctx.query, market.tokens.length, (i) => tokenRecord(market, i, ctx.now)),
    },
    {
      method: 'GET',
      pattern: /^\/user\/portfolio$/,
      name: 'GET /user/portfolio',
      access: 'user',
      permission: 'read:portfolio',
      handle: (ctx) => {
        noQuery(ctx);
        market.advance(ctx.now);
        return { data: portfolioRecord(market, ctx.principal!.wallet, ctx.now) };
      },
    },
    { method: 'POST', pattern: /^\/auth\/challenge$/, name: 'POST /auth/challenge', access: 'auth', handle: (ctx) => ({ data: auth.challenge(ctx.body) }) },
    { method: 'POST', pattern: /^\/auth\/wallet$/, name: 'POST /auth/wallet', access: 'auth', handle: async (ctx) => ({ data: await auth.signIn(ctx.body) }) },
    { method: 'POST', pattern: /^\/auth\/refresh$/, name: 'POST /auth/refresh', access: 'auth', handle: async (ctx) => ({ data: await auth.refresh(ctx.body) }) },
  ];
}
