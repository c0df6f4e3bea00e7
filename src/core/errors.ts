/**
 * One error hierarchy for the whole bot. Every class has a stable `code` that scripts and
 * logs can match on, and a `kind` that says what the bot should do about it:
 * - `temporary`: retrying later may succeed (network, 5xx, 429).
 * - `operational`: stop and tell a human (bad config, bad credentials, refused sign-in).
 * - `input`: the caller asked for something invalid (bad parameter, unknown index).
 * - `strategy`: the user's strategy code failed.
 *
 * Messages are built only from non-secret parts; `toJSON()` lists exactly the fields that
 * are safe to serialize, so a logged or JSON-dumped error never carries a credential.
 */
export type ErrorKind = 'temporary' | 'operational' | 'input' | 'strategy';

/** Every code an `IndexbotError` carries, for a `switch (e.code)` that the compiler checks. */
export type ErrorCode =
  | 'CONFIG_INVALID'
  | 'USAGE_INVALID'
  | 'WALLET_KEYPAIR_INVALID'
  | 'SIGNIN_MESSAGE_REFUSED'
  | 'NETWORK_ERROR'
  | 'TIMEOUT'
  | 'RESPONSE_INVALID'
  | 'RESPONSE_MALFORMED'
  | 'API_BAD_REQUEST'
  | 'API_UNAUTHORIZED'
  | 'API_FORBIDDEN'
  | 'API_NOT_FOUND'
  | 'API_RATE_LIMITED'
  | 'API_SERVER_ERROR'
  | StoreError['code']
  | StoreWriteError['code']
  | StrategyError['code']
  | BacktestDataError['code']
  /** A command stopped by Ctrl-C, saying what it kept. */
  | 'INTERRUPTED'
  /** `init` and `new-strategy`: a file in the way, or one they cannot read. */
  | 'FILE_EXISTS'
  | 'FILE_INVALID'
  | 'PROJECT_COMMONJS'
  /** A runner's database has read further than its stream holds. */
  | 'STREAM_AHEAD';

export class IndexbotError extends Error {
  readonly code: ErrorCode;
  readonly kind: ErrorKind;

  constructor(message: string, code: ErrorCode, kind: ErrorKind) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.kind = kind;
  }

  toJSON(): Record<string, unknown> {
    return { name: this.name, code: this.code, kind: this.kind, message: this.message };
  }
}

export class ConfigError extends IndexbotError {
  constructor(message: string) {
    super(message, 'CONFIG_INVALID', 'operational');
  }
}

/** A command was given a flag or argument it cannot use (exit 64): the message names the flag and the value. */
export class UsageError extends IndexbotError {
  constructor(message: string) {
    super(message, 'USAGE_INVALID', 'input');
  }
}

/** A bad value, as what gave it calls for: a flag's is a usage error (exit 64), the config file's a config error (78). */
export function inputError(message: string, fromFlag: boolean): UsageError | ConfigError {
  return fromFlag ? new UsageError(message) : new ConfigError(message);
}

/**
 * A port taken or an address we may not bind is one line naming what asked for it (`--port 7420`,
 * `--http 127.0.0.1:9464`, a config key), not a stack trace; any other failure is returned as is.
 * Asked by a flag, it is a usage error (exit 64); by the config file, a config error (78).
 */
export function listenFailure(e: unknown, host: string, port: number, named: { port: string; host: string; fromFlag?: boolean }): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  const refuse = (message: string) => inputError(message, named.fromFlag !== false);
  if (code === 'EADDRINUSE') return refuse(`${named.port}: ${host}:${port} is already in use; pick another port, or 0 for any free one`);
  if (code === 'EACCES') return refuse(`${named.port}: not allowed to listen on ${host}:${port} (a port under 1024 needs privileges)`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return refuse(`${named.host}: not an address of this machine (${code})`);
  return e;
}

export class KeypairError extends IndexbotError {
  constructor(message: string) {
    super(message, 'WALLET_KEYPAIR_INVALID', 'operational');
  }
}

/** We refused to sign a sign-in message the server sent, because it was not the one we expect. */
export class SigninRefusedError extends IndexbotError {
  constructor(message: string) {
    super(message, 'SIGNIN_MESSAGE_REFUSED', 'operational');
  }
}

export class NetworkError extends IndexbotError {
  readonly endpoint: string;
  /** The system error code (ECONNREFUSED, ECONNRESET, ...), never the request. */
  readonly errno: string | undefined;

  /** @param server The base URL asked: a refused connection is most often the wrong one. */
  constructor(endpoint: string, errno: string | undefined, server?: string) {
    super(`network error on ${endpoint}${server ? ` at ${server}` : ''}${errno ? ` (${errno})` : ''}`, 'NETWORK_ERROR', 'temporary');
    this.endpoint = endpoint;
    this.errno = errno;
  }

  override toJSON() {
    return { ...super.toJSON(), endpoint: this.endpoint, errno: this.errno };
  }
}

export class TimeoutError extends IndexbotError {
  readonly endpoint: string;
  readonly timeoutMs: number;

  constructor(endpoint: string, timeoutMs: number, server?: string) {
    super(`no response from ${endpoint}${server ? ` at ${server}` : ''} within ${timeoutMs} ms`, 'TIMEOUT', 'temporary');
    this.endpoint = endpoint;
    this.timeoutMs = timeoutMs;
  }

  override toJSON() {
    return { ...super.toJSON(), endpoint: this.endpoint, timeoutMs: this.timeoutMs };
  }
}

export interface ValidationIssue {
  /** Dotted field path, e.g. `data.constituents.3.weight`. */
  path: string;
  message: string;
}

/** The server answered 2xx with a body that does not match the record schema. */
export class ResponseValidationError extends IndexbotError {
  readonly endpoint: string;
  readonly issues: ValidationIssue[];
  readonly requestId: string | undefined;

  constructor(endpoint: string, issues: ValidationIssue[], requestId?: string) {
    const shown = issues
      .slice(0, 5)
      .map((i) => `${i.path || '(root)'}: ${i.message}`)
      .join('; ');
    const more = issues.length > 5 ? ` (+${issues.length - 5} more)` : '';
    super(`invalid response from ${endpoint}: ${shown}${more}`, 'RESPONSE_INVALID', 'temporary');
    this.endpoint = endpoint;
    this.issues = issues;
    this.requestId = requestId;
  }

  override toJSON() {
    return { ...super.toJSON(), endpoint: this.endpoint, issues: this.issues, requestId: this.requestId };
  }
}

/** The body is not JSON at all (an HTML error page from a proxy, a truncated body). */
export class MalformedResponseError extends IndexbotError {
  readonly endpoint: string;
  readonly status: number;
  readonly contentType: string | undefined;

  constructor(endpoint: string, status: number, contentType: string | undefined) {
    super(`response from ${endpoint} (HTTP ${status}) is not JSON${contentType ? ` (content-type ${contentType})` : ''}`, 'RESPONSE_MALFORMED', 'temporary');
    this.endpoint = endpoint;
    this.status = status;
    this.contentType = contentType;
  }

  override toJSON() {
    return { ...super.toJSON(), endpoint: this.endpoint, status: this.status, contentType: this.contentType };
  }
}

export interface ApiErrorInit {
  endpoint: string;
  status: number;
  /** The server's `error.code`, e.g. `INVALID_PARAMETER`. */
  apiCode: string | undefined;
  message: string;
  requestId?: string | undefined;
  /** The server's `error.reason` (or the reason found in `WWW-Authenticate`), e.g. `token_expired`. */
  reason?: string | undefined;
  details?: unknown;
}

/** The server answered with an error envelope (or an error status). */
export class ApiError extends IndexbotError {
  declare readonly code: 'API_BAD_REQUEST' | 'API_UNAUTHORIZED' | 'API_FORBIDDEN' | 'API_NOT_FOUND' | 'API_RATE_LIMITED' | 'API_SERVER_ERROR';
  readonly endpoint: string;
  readonly status: number;
  readonly apiCode: string | undefined;
  readonly requestId: string | undefined;
  readonly reason: string | undefined;
  readonly details: unknown;

  constructor(init: ApiErrorInit, code: ApiError['code'], kind: ErrorKind) {
    const id = init.requestId ? `, request ${init.requestId}` : '';
    const what = [init.apiCode, init.reason].filter(Boolean).join('/');
    super(`${init.endpoint}: HTTP ${init.status}${what ? ` ${what}` : ''}: ${init.message}${id}`, code, kind);
    this.endpoint = init.endpoint;
    this.status = init.status;
    this.apiCode = init.apiCode;
    this.requestId = init.requestId;
    this.reason = init.reason;
    this.details = init.details;
  }

  override toJSON() {
    return {
      ...super.toJSON(),
      endpoint: this.endpoint,
      status: this.status,
      apiCode: this.apiCode,
      reason: this.reason,
      requestId: this.requestId,
      details: this.details,
    };
  }
}

export class BadRequestError extends ApiError {
  constructor(init: ApiErrorInit) {
    super(init, 'API_BAD_REQUEST', 'input');
  }
}

/** Credentials missing, invalid or expired beyond repair: a human must act (`indexbot login`, a new key). */
export class AuthError extends ApiError {
  constructor(init: ApiErrorInit) {
    super(init, 'API_UNAUTHORIZED', 'operational');
  }
}

export class ForbiddenError extends ApiError {
  constructor(init: ApiErrorInit) {
    super(init, 'API_FORBIDDEN', 'operational');
  }
}

export class NotFoundError extends ApiError {
  constructor(init: ApiErrorInit) {
    super(init, 'API_NOT_FOUND', 'input');
  }
}

export class RateLimitError extends ApiError {
  constructor(init: ApiErrorInit) {
    super(init, 'API_RATE_LIMITED', 'temporary');
  }
}

export class ServerError extends ApiError {
  constructor(init: ApiErrorInit) {
    super(init, 'API_SERVER_ERROR', 'temporary');
  }
}

/** Maps an HTTP status to the error class of its meaning; the server's code only refines it. */
export function apiErrorFor(init: ApiErrorInit): ApiError {
  const s = init.status;
  if (s === 401) return new AuthError(init);
  if (s === 403) return new ForbiddenError(init);
  if (s === 404) return new NotFoundError(init);
  if (s === 429) return new RateLimitError(init);
  if (s >= 500) return new ServerError(init);
  if (s >= 400) return new BadRequestError(init);
  return new ServerError(init);
}

/** The SQLite cache cannot be used as it is (newer schema, locked by another run, unopenable). */
export class StoreError extends IndexbotError {
  declare readonly code: 'STORE_SCHEMA_NEWER' | 'STORE_LOCKED' | 'STORE_UNAVAILABLE' | 'STORE_FOREIGN';
  constructor(message: string, code: 'STORE_SCHEMA_NEWER' | 'STORE_LOCKED' | 'STORE_UNAVAILABLE' | 'STORE_FOREIGN') {
    super(message, code, 'operational');
  }
}

/**
 * A write to the cache failed for a reason that passes: the disk is full, another connection
 * held the file locked past the busy timeout, an I/O error. SQLite rolled the write back, so
 * nothing of it was kept; whoever tried it tries again later.
 */
export class StoreWriteError extends IndexbotError {
  declare readonly code: 'STORE_FULL' | 'STORE_BUSY' | 'STORE_IO';
  /** SQLite's extended result code, e.g. `SQLITE_FULL`, `SQLITE_BUSY`, `SQLITE_IOERR_WRITE`. */
  readonly sqliteCode: string;

  constructor(message: string, code: 'STORE_FULL' | 'STORE_BUSY' | 'STORE_IO', sqliteCode: string) {
    super(message, code, 'temporary');
    this.sqliteCode = sqliteCode;
  }

  override toJSON() {
    return { ...super.toJSON(), sqliteCode: this.sqliteCode };
  }
}

/** The fields of any thrown value that are safe and useful in a log line. */
export function errorFields(e: unknown): Record<string, unknown> {
  if (e instanceof IndexbotError) return e.toJSON();
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    return { name: e.name, ...(typeof code === 'string' ? { code } : {}), message: e.message };
  }
  return { message: String(e) };
}

/** A strategy's own code or definition failed: loading it, its params, or a handler. */
export class StrategyError extends IndexbotError {
  declare readonly code: 'STRATEGY_LOAD' | 'STRATEGY_PARAMS' | 'STRATEGY_HANDLER' | 'STRATEGY_TIMEOUT' | 'STRATEGY_UNKNOWN';
  constructor(message: string, code: 'STRATEGY_LOAD' | 'STRATEGY_PARAMS' | 'STRATEGY_HANDLER' | 'STRATEGY_TIMEOUT' | 'STRATEGY_UNKNOWN') {
    super(message, code, 'strategy');
  }
}

/** A backtest cannot give a sound answer from the options or the cache it was given (an option out of its range, no data, a gap too large). */
export class BacktestDataError extends IndexbotError {
  declare readonly code: 'BACKTEST_NO_DATA' | 'BACKTEST_GAP' | 'BACKTEST_OPTIONS';
  constructor(message: string, code: 'BACKTEST_NO_DATA' | 'BACKTEST_GAP' | 'BACKTEST_OPTIONS') {
    super(message, code, 'input');
  }
}
