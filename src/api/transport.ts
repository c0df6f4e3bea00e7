import { createHash } from 'node:crypto';
import axios, { type AxiosAdapter, AxiosError, type AxiosInstance, type AxiosResponse, type InternalAxiosRequestConfig, isAxiosError } from 'axios';
import axiosRetry from 'axios-retry';
import type { z } from 'zod';
import type { WalletSession } from '../auth/index.ts';
import type { RecordSchemas } from '../contract/index.ts';
import {
  type ApiError,
  AuthError,
  type Clock,
  type Logger,
  MalformedResponseError,
  NetworkError,
  ResponseValidationError,
  TimeoutError,
  type ValidationIssue,
  apiErrorFor,
  eitherSignal,
  sleep,
} from '../core/index.ts';
import { type Permit, type Priority, RateGate, type RateGateSeed, type RateGateState, type SharedBudget, credentialDigest, type Tier, type TierLimits, tierLimits } from '../ratelimit/index.ts';
import type { Page } from './pagination.ts';

/** The error codes of the contract; any other is passed through and warned about once. */
const KNOWN_ERROR_CODES = new Set(['INVALID_API_KEY', 'RATE_LIMIT_EXCEEDED', 'INVALID_PARAMETER', 'RESOURCE_NOT_FOUND', 'INTERNAL_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'SERVICE_UNAVAILABLE']);
const RETRYABLE_STATUS = new Set([500, 502, 503, 504]);

export type AuthMode = 'none' | 'optional' | 'required';

export interface RequestSpec {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** `none`: auth endpoints (public bucket); `optional`: public data; `required`: user data. */
  auth: AuthMode;
  priority: Priority;
  signal?: AbortSignal | undefined;
  /** Ends the request only while it waits to be sent (the gate, a retry's backoff): see `CallOptions.waitSignal`. */
  waitSignal?: AbortSignal | undefined;
}

export interface TransportOptions {
  baseUrl: string;
  apiKey: string | undefined;
  session: WalletSession | undefined;
  tier: Tier | undefined;
  enterpriseLimits: TierLimits | undefined;
  windowMs: number;
  timeoutMs: number;
  retries: number;
  retryBaseMs: number;
  retryMaxMs: number;
  maxRateLimitRequeues: number;
  clock: Clock;
  random: () => number;
  logger: Logger;
  adapter: AxiosAdapter | undefined;
  gateSeeds: ReadonlyMap<string, RateGateSeed> | undefined;
  sharedBudgets: SharedBudgetSource | undefined;
  schemas: RecordSchemas;
  warnOnce: (key: string, obj: object, msg: string) => void;
  observer: RequestObserver | undefined;
}

/** Told of every attempt and retry, for metrics; `endpoint` is a template (`GET /indexes/{index_id}`), never a raw path. */
export interface RequestObserver {
  onRequest?(r: { endpoint: string; status: number | null; durationMs: number; gate: string }): void;
  onRetry?(endpoint: string): void;
}

/** Where a credential's budget shared across processes comes from (e.g. `RedisBudgets`). */
export interface SharedBudgetSource {
  budget(credentialDigest: string, gateName: string): SharedBudget;
}

interface Credential {
  gate: RateGate;
  token: string | undefined;
  session: WalletSession | undefined;
}

interface Envelope {
  success?: unknown;
  data?: unknown;
  meta?: { request_id?: unknown; pagination?: { page?: unknown; limit?: unknown; total?: unknown } };
  total?: unknown;
}

type TaggedConfig = InternalAxiosRequestConfig & { indexbot?: { spec: RequestSpec } };

/**
 * HTTP for the client: every attempt (first try, retry after a 5xx, re-queue after a 429,
 * retry after a token refresh) passes the credential's RateGate, so all of them count
 * against the budget. Bodies are read as text and parsed here, so a non-JSON body is a
 * clear error and no axios error (which carries request headers) ever leaves this module.
 */
export class Transport {
  private readonly http: AxiosInstance;
  private readonly inner: AxiosAdapter;
  private readonly gates = new Map<string, RateGate>();
  /** The base URL as errors name it: origin and path only, never a query or userinfo that could hold a credential. */
  private readonly server: string;

  constructor(private readonly o: TransportOptions) {
    this.server = serverName(o.baseUrl);
    this.inner = axios.getAdapter(o.adapter ?? 'http');
    this.http = axios.create({
      baseURL: o.baseUrl,
      timeout: o.timeoutMs,
      responseType: 'text',
      transformResponse: [(data: unknown) => data],
      transitional: { clarifyTimeoutError: true },
      headers: { Accept: 'application/json' },
      adapter: (config) => this.send(config as TaggedConfig),
    });
    axiosRetry(this.http, {
      retries: o.retries,
      shouldResetTimeout: true,
      retryCondition: (error) => isRetryable(error),
      retryDelay: () => 0,
      onRetry: async (count, error, config) => {
        const delay = Math.floor(o.random() * Math.min(o.retryMaxMs, o.retryBaseMs * 2 ** (count - 1)));
        const spec = (config as TaggedConfig).indexbot?.spec;
        if (spec) o.observer?.onRetry?.(endpointTemplate(spec));
        // Debug: retries are counted (indexbot_api_retries_total), and a request that fails in the end is logged by its caller (trial 32: an outage wrote 3 warnings per failed poll).
        o.logger.debug({ endpoint: endpointOf(config as TaggedConfig), attempt: count, status: error.response?.status, errno: error.code, delayMs: delay }, 'retrying request');
        const waiting = whileWaiting(config as TaggedConfig);
        try {
          await sleep(o.clock, delay, waiting.signal);
        } finally {
          waiting.done();
        }
      },
    });
  }

  /** The state of every gate in use (one per credential), for `status` and logs. */
  gateStates(): RateGateState[] {
    return [...this.gates.values()].map((g) => g.state());
  }

  /** Sends a request and returns its parsed JSON envelope, or throws an `IndexbotError`. */
  async request(spec: RequestSpec): Promise<{ body: Envelope; requestId: string | undefined }> {
    const endpoint = `${spec.method} ${spec.path}`;
    let res: AxiosResponse<string>;
    try {
      res = await this.http.request<string>({
        method: spec.method,
        url: spec.path,
        params: spec.query,
        data: spec.body,
        signal: spec.signal,
        indexbot: { spec },
      } as TaggedConfig);
    } catch (e) {
      throw this.toError(e, endpoint);
    }
    const body = parseJson(res.data);
    if (!isObject(body)) throw new MalformedResponseError(endpoint, res.status, contentType(res));
    const requestId = requestIdOf(body, res);
    if (body.success === false) throw this.apiError(endpoint, res.status, body, res);
    return { body, requestId };
  }

  /** Validates `value` (found at `path` of the body) against `schema`. */
  validate<S extends z.ZodType>(schema: S, value: unknown, endpoint: string, path: string, requestId?: string): z.output<S> {
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    const issues: ValidationIssue[] = parsed.error.issues.map((i) => ({
      path: [path, ...i.path.map(String)].filter(Boolean).join('.'),
      message: i.message,
    }));
    throw new ResponseValidationError(endpoint, issues, requestId);
  }

  /** The unvalidated items of one page, in either list form the live service documents. */
  rawPage(body: Envelope, endpoint: string, requestId: string | undefined, asked: { page: number; limit: number }): Page<unknown> & { path: string } {
    const data = body.data;
    let items: unknown[];
    let path: string;
    if (Array.isArray(data)) {
      items = data;
      path = 'data';
    } else if (isObject(data) && Array.isArray((data as { items?: unknown }).items)) {
      items = (data as { items: unknown[] }).items;
      path = 'data.items';
    } else {
      throw new ResponseValidationError(endpoint, [{ path: 'data', message: 'expected a list: an array or { items: [...] }' }], requestId);
    }
    const pagination = body.meta?.pagination;
    return {
      items,
      path,
      total: asCount(pagination?.total) ?? asCount(body.total),
      page: asCount(pagination?.page) ?? asked.page,
      limit: asCount(pagination?.limit) ?? asked.limit,
    };
  }

  /** `credential`: the secret (or identity) a shared budget is keyed by; the public gate has none (its bucket is per IP). */
  private gate(id: string, limits: TierLimits, credential?: string): RateGate {
    let gate = this.gates.get(id);
    if (!gate) {
      gate = new RateGate({
        ...limits,
        name: id,
        windowMs: this.o.windowMs,
        clock: this.o.clock,
        random: this.o.random,
        logger: this.o.logger,
        seed: this.o.gateSeeds?.get(id),
        shared: credential === undefined ? undefined : this.o.sharedBudgets?.budget(credentialDigest(credential), id),
      });
      this.gates.set(id, gate);
    }
    return gate;
  }

  private limitsFor(defaultTier: Tier): TierLimits {
    return tierLimits(this.o.tier ?? defaultTier, this.o.enterpriseLimits);
  }

  private async credential(auth: AuthMode): Promise<Credential> {
    const publicGate = () => this.gate('public', tierLimits('public'));
    if (auth === 'none') return { gate: publicGate(), token: undefined, session: undefined };
    if (this.o.apiKey) {
      return { gate: this.gate(`key:${fingerprint(this.o.apiKey)}`, this.limitsFor('basic'), this.o.apiKey), token: this.o.apiKey, session: undefined };
    }
    const session = this.o.session;
    if (session?.usable) {
      const token = await session.accessToken();
      const id = `jwt:${session.subject() ?? 'unknown'}`;
      return { gate: this.gate(id, this.limitsFor('standard'), session.subject() === undefined ? undefined : id), token, session };
    }
    if (auth === 'required') {
      throw new AuthError({
        endpoint: 'client',
        status: 401,
        apiCode: 'INVALID_API_KEY',
        reason: 'missing_credentials',
        message: 'this endpoint needs a credential: set INDEXBOT_API_KEY, or run `indexbot login` with a wallet keypair',
      });
    }
    return { gate: publicGate(), token: undefined, session: undefined };
  }

  /** The axios adapter: gate, credential, send; re-queue after 429, refresh once after `token_expired`. */
  private async send(config: TaggedConfig): Promise<AxiosResponse> {
    const spec = config.indexbot?.spec;
    if (!spec) throw new Error('request without a spec');
    let refreshed = false;
    for (let requeues = 0; ; ) {
      const cred = await this.credential(spec.auth);
      if (cred.token) config.headers.set('Authorization', `Bearer ${cred.token}`);
      else config.headers.delete('Authorization');
      const waiting = whileWaiting(config);
      let permit: Permit;
      try {
        permit = await cred.gate.acquire(spec.priority, waiting.signal);
      } finally {
        waiting.done();
      }
      let res: AxiosResponse;
      const started = this.o.clock.now();
      try {
        res = await this.inner({ ...config, validateStatus: () => true });
      } catch (e) {
        cred.gate.release(permit);
        const errno = isAxiosError(e) ? ((e.cause as NodeJS.ErrnoException | undefined)?.code ?? e.code) : undefined;
        this.logRequest(spec, cred.gate, started, { status: null, errno });
        throw e;
      }
      cred.gate.release(permit, { status: res.status, headers: res.headers as Record<string, unknown> });
      this.logRequest(spec, cred.gate, started, { status: res.status, requestId: requestIdOf(undefined, res) ?? requestIdInText(res.data) });
      if (res.status === 429 && requeues < this.o.maxRateLimitRequeues) {
        requeues++;
        continue;
      }
      if (res.status === 401 && cred.session && cred.token && !refreshed && isDeadAccessToken(res)) {
        refreshed = true;
        await cred.session.tokenExpired(cred.token);
        continue;
      }
      if (res.status < 200 || res.status >= 300) {
        const code = res.status >= 500 ? AxiosError.ERR_BAD_RESPONSE : AxiosError.ERR_BAD_REQUEST;
        throw new AxiosError(`HTTP ${res.status}`, code, config, res.request, res);
      }
      return res;
    }
  }

  /**
   * One line per attempt (retries and re-queues included), at debug: a daemon's steady
   * polling would otherwise fill the journal. Failures are also reported by whoever gives up.
   */
  private logRequest(spec: RequestSpec, gate: RateGate, started: number, outcome: { status: number | null; requestId?: string | undefined; errno?: string | undefined }): void {
    const query = spec.query && new URLSearchParams(Object.entries(spec.query).flatMap(([k, v]): [string, string][] => (v === undefined ? [] : [[k, String(v)]]))).toString();
    const durationMs = this.o.clock.now() - started;
    this.o.logger.debug({ method: spec.method, path: spec.path, ...(query ? { query } : {}), ...outcome, durationMs, gate: gate.name }, 'request');
    this.o.observer?.onRequest?.({ endpoint: endpointTemplate(spec), status: outcome.status, durationMs, gate: gate.name });
  }

  /** Axios errors become ours (they carry request headers, so none may escape); others pass as they are. */
  private toError(e: unknown, endpoint: string): unknown {
    if (!isAxiosError(e)) return e;
    const res = e.response as AxiosResponse<string> | undefined;
    if (res) return this.apiError(endpoint, res.status, parseJson(res.data), res);
    if (e.code === 'ETIMEDOUT' || e.code === 'ECONNABORTED') return new TimeoutError(endpoint, this.o.timeoutMs, this.server);
    if (e.code === AxiosError.ERR_CANCELED) {
      // The caller's own abort: its reason is what the caller expects back.
      const signal = e.config?.signal as AbortSignal | undefined;
      return signal?.aborted && signal.reason instanceof Error ? signal.reason : new NetworkError(endpoint, 'ABORTED');
    }
    const errno = (e.cause as NodeJS.ErrnoException | undefined)?.code ?? e.code;
    return new NetworkError(endpoint, errno, this.server);
  }

  private apiError(endpoint: string, status: number, body: unknown, res: AxiosResponse): ApiError {
    const parsed = this.o.schemas.errorEnvelope.safeParse(body);
    const err = parsed.success ? parsed.data.error : undefined;
    if (err && !KNOWN_ERROR_CODES.has(err.code)) {
      this.o.warnOnce(`error-code:${err.code}`, { code: err.code, status }, 'unknown error code from server; passing it through');
    }
    const fallback = body === undefined ? `non-JSON error body${contentType(res) ? ` (${contentType(res)})` : ''}` : 'error without the error envelope';
    return apiErrorFor({
      endpoint,
      status,
      apiCode: err?.code,
      message: this.scrub(err?.message ?? fallback),
      requestId: requestIdOf(isObject(body) ? body : undefined, res),
      reason: err?.reason ?? wwwAuthenticateReason(res),
      details: err?.details,
    });
  }

  /** Defence in depth: a server could echo a credential back in its message. */
  private scrub(text: string): string {
    const tokens = this.o.session?.current();
    const secrets = [this.o.apiKey, tokens?.accessToken, tokens?.refreshToken].filter((s): s is string => !!s && s.length >= 8);
    return secrets.reduce((t, s) => t.split(s).join('[REDACTED]'), text);
  }
}

function endpointOf(config: TaggedConfig): string {
  const spec = config.indexbot?.spec;
  return spec ? `${spec.method} ${spec.path}` : 'request';
}

/** The path with its index id replaced, so a metric label takes a bounded set of values. */
function serverName(baseUrl: string): string {
  try {
    const u = new URL(baseUrl);
    return `${u.origin}${u.pathname}`.replace(/\/$/, '');
  } catch {
    return 'the base URL';
  }
}

export function endpointTemplate(spec: Pick<RequestSpec, 'method' | 'path'>): string {
  return `${spec.method} ${spec.path.replace(/^\/indexes\/[^/]+/, '/indexes/{index_id}')}`;
}

/** While a request waits to be sent, its wait signal ends it as its own signal does; once sent, only its own. */
function whileWaiting(config: TaggedConfig): ReturnType<typeof eitherSignal> {
  return eitherSignal(config.signal as AbortSignal | undefined, config.indexbot?.spec.waitSignal);
}

function isRetryable(error: unknown): boolean {
  if (!isAxiosError(error)) return false;
  if (error.code === AxiosError.ERR_CANCELED) return false;
  if ((error.config?.method ?? 'get').toLowerCase() !== 'get') return false;
  if (!error.response) return true;
  return RETRYABLE_STATUS.has(error.response.status);
}

/**
 * A 401 that a new access token can cure: `token_expired` (in `error.reason`, `error.code`
 * in any case, or `WWW-Authenticate`), or `token_invalid` (e.g. the session was revoked),
 * which refreshing or signing in again also fixes when it can be fixed at all.
 */
function isDeadAccessToken(res: AxiosResponse): boolean {
  const curable = (v: unknown) => typeof v === 'string' && ['token_expired', 'token_invalid'].includes(v.toLowerCase());
  if (curable(wwwAuthenticateReason(res))) return true;
  const body = parseJson(res.data);
  if (!isObject(body) || !isObject((body as { error?: unknown }).error)) return false;
  const error = (body as { error: { reason?: unknown; code?: unknown } }).error;
  return curable(error.reason) || curable(error.code);
}

function wwwAuthenticateReason(res: AxiosResponse): string | undefined {
  const header = res.headers['www-authenticate'];
  if (typeof header !== 'string') return undefined;
  return /token_expired/i.test(header) ? 'token_expired' : /error_description="([^"]+)"/.exec(header)?.[1];
}

function parseJson(text: unknown): unknown {
  if (typeof text !== 'string') return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(v: unknown): v is Envelope {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function asCount(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}

function contentType(res: AxiosResponse): string | undefined {
  const ct = res.headers['content-type'];
  return typeof ct === 'string' ? ct.split(';')[0] : undefined;
}

function requestIdOf(body: Envelope | undefined, res: AxiosResponse): string | undefined {
  const fromBody = body?.meta?.request_id;
  if (typeof fromBody === 'string') return fromBody;
  const header = res.headers['x-request-id'];
  return typeof header === 'string' ? header : undefined;
}

/** The envelope's request id without parsing the body twice (the header usually has it). */
function requestIdInText(text: unknown): string | undefined {
  return typeof text === 'string' ? /"request_id"\s*:\s*"([^"\\]{1,128})"/.exec(text)?.[1] : undefined;
}

/** Names a credential's rate gate without revealing it. */
function fingerprint(secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 8);
}
