import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** A connection to one Redis, or to a Redis Cluster through any of its nodes. */
export type RedisConnection = Redis | Cluster;

/** What the connection should do; the same for one Redis and for a cluster's nodes. */
export interface ConnectionOptions {
  lazyConnect?: boolean;
  enableOfflineQueue: boolean;
  maxRetriesPerRequest: number;
  connectTimeout: number;
  commandTimeout: number;
  /** ms until the next reconnection attempt, or null to stop (a cluster's reconnection too). */
  retryStrategy: (attempt: number) => number | null;
}

/**
 * Reconnects forever, sooner at first and then every second: what depends on Redis (a shared
 * budget, a stream) is back within about a second of it.
 */
export function reconnectWithinASecond(attempt: number): number {
  return Math.min(1_000, attempt * 200);
}

interface ClusterUrl {
  tls: boolean;
  username: string | undefined;
  password: string | undefined;
  nodes: { host: string; port: number }[];
}

const CLUSTER_URL = /^(rediss?)-cluster:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#@]+)\/?$/;
const NODE = /^(\[[0-9a-fA-F:.]+\]|[^:,[\]]+):(\d{1,5})$/;

/**
 * `redis-cluster://[user:password@]host:port[,host:port…]` (`rediss-cluster://` with TLS): the
 * startup nodes of a Redis Cluster. ioredis finds the others and follows the slots. Undefined
 * for a URL of another scheme; throws when a cluster URL is malformed.
 */
export function parseClusterUrl(url: string): ClusterUrl | undefined {
  if (!/^rediss?-cluster:/.test(url)) return undefined;
  const m = CLUSTER_URL.exec(url);
  if (!m) throw new TypeError('expected redis-cluster://[user:password@]host:port[,host:port…] (no database: a cluster has only 0)');
  const nodes = m[4]!.split(',').map((node) => {
    const n = NODE.exec(node);
    const port = Number(n?.[2]);
    if (!n || port < 1 || port > 65535) throw new TypeError(`expected host:port for each cluster node, got "${node}"`);
    return { host: n[1]!.replace(/^\[|\]$/g, ''), port };
  });
  const decode = (s: string | undefined) => (s ? decodeURIComponent(s) : undefined);
  return { tls: m[1] === 'rediss', username: decode(m[2]), password: decode(m[3]), nodes };
}

/**
 * Why `url` is not one `connectRedis` takes (redis://, rediss://, redis-cluster://,
 * rediss-cluster://), without repeating it (it may hold a password); undefined if it is.
 */
export function redisUrlProblem(url: string): string | undefined {
  try {
    if (parseClusterUrl(url)) return undefined;
  } catch (e) {
    return (e as Error).message;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // The usual slip, said apart; the URL itself is never quoted (it may hold a password).
    const port = /^[a-z-]+:\/\/(?:[^@/]*@)?(?:\[[^\]]*\]|[^:/]*):([^/]*)/i.exec(url)?.[1];
    if (port !== undefined && (!/^\d{1,5}$/.test(port) || Number(port) > 65_535)) return 'its port is not a number from 1 to 65535';
    return 'not a URL';
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') return `the scheme is ${parsed.protocol.slice(0, 20)}`;
  // ioredis reads the path as the database: anything else crashed its SELECT with a stack trace (trial 29).
  if (!/^\/?(\d{1,9})?$/.test(parsed.pathname)) return 'its path is not a database number, as in redis://host:6379/0';
  return undefined;
}

/**
 * One Redis (`redis://`, `rediss://`) or a Redis Cluster (`redis-cluster://`, `rediss-cluster://`).
 * Every key we use in one command carries the same hash tag, so scripts and pipelines stay in
 * one slot and no command fails with CROSSSLOT.
 */
export function connectRedis(url: string, options: ConnectionOptions): RedisConnection {
  // After disconnect(), ioredis waits this long for a socket to close before destroying it, with
  // a timer that stays armed when the socket had closed already (a refused connection): at 2 s,
  // its default, a process stopping while Redis was down lingered 2 s after "stopped".
  const o = { ...options, disconnectTimeout: 200 };
  const cluster = parseClusterUrl(url);
  if (!cluster) return new Redis(url, o);
  const { retryStrategy, enableOfflineQueue, lazyConnect, ...nodeOptions } = o;
  const redisOptions: RedisOptions = { ...nodeOptions, username: cluster.username, password: cluster.password, ...(cluster.tls ? { tls: {} } : {}) };
  return new Cluster(cluster.nodes, { redisOptions, enableOfflineQueue, lazyConnect, clusterRetryStrategy: retryStrategy, slotsRefreshTimeout: o.connectTimeout });
}

/**
 * What went wrong with a Redis command, in words for a log: ioredis says a connection that is
 * down in terms of its own options ("Stream isn't writeable and enableOfflineQueue options is
 * false", "Reached the max retries per request limit (which is 1). Refer to …").
 */
export function describeRedisError(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  if (/Stream isn't writeable|Connection is closed/.test(message)) return 'not connected to Redis';
  if (/max retries per request/.test(message)) return 'Redis did not answer before the connection was lost';
  return message;
}

/** The URL as it may be logged: without its password, nor a user name other than `default`. */
export function redactRedisUrl(url: string): string {
  const cluster = /^(rediss?-cluster:\/\/)(?:([^:@/]*)(?::([^@/]*))?@)?(.*)$/.exec(url);
  if (cluster) {
    const [, scheme, user, password, rest] = cluster;
    const who = user === undefined && password === undefined ? '' : `${user && user !== 'default' ? '***' : (user ?? '')}${password === undefined ? '' : ':***'}@`;
    return `${scheme}${who}${rest}`;
  }
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    if (u.username && u.username !== 'default') u.username = '***';
    return u.toString();
  } catch {
    return 'an unparsable Redis URL';
  }
}

/** A setting of a connection the server refused, in its words: a fix to make, not an outage to wait out. */
export interface RedisRefusal {
  /** What it refused: the credentials (a wrong password, none where one is required, a disabled user), or the database number (past the server's `databases`). */
  what: 'credentials' | 'database number';
  /** Redis's words (it never echoes a password, so they may be shown). */
  message: string;
}

/** The server's refusal of a connection's credentials or database number; undefined for any other failure. */
export function redisRefusal(e: unknown): RedisRefusal | undefined {
  const message = e instanceof Error ? e.message : '';
  if (/^(WRONGPASS|NOAUTH)\b|^ERR (invalid password|AUTH\b)/.test(message)) return { what: 'credentials', message };
  // ioredis selects the URL's database as it connects; refused, it goes on in database 0 (trial 29), reading another's keys.
  if (/^ERR (DB index is out of range|invalid DB index)/.test(message)) return { what: 'database number', message };
  return undefined;
}

/**
 * Connects once to `url` and tells whether the server refuses its credentials or database
 * number, or undefined when it accepts them or cannot be reached within `timeoutMs` (reaching
 * it is then the caller's retries' business).
 */
export async function refusedSettings(url: string, timeoutMs = 3_000): Promise<RedisRefusal | undefined> {
  const probe = probeRedis(url, timeoutMs);
  try {
    await probe.redis.connect();
    // A cluster connects before its nodes answer: a command shows whether they accept us.
    await probe.redis.ping();
  } catch (e) {
    probe.saw(e);
  } finally {
    probe.redis.disconnect();
  }
  return probe.refusal();
}

/**
 * A one-off connection for a check: no retries, no offline queue, `timeoutMs` for the connect
 * and each command. The refusal of a password comes as an error event (the connect() that
 * follows only says the connection closed), a cluster node's as a 'node error': `refusal()` is
 * the first seen there or given to `saw`.
 */
export function probeRedis(url: string, timeoutMs: number) {
  const redis = connectRedis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: timeoutMs, commandTimeout: timeoutMs, retryStrategy: () => null });
  let refusal: RedisRefusal | undefined;
  const saw = (e: unknown) => {
    refusal ??= redisRefusal(e);
  };
  redis.on('error', saw);
  // A cluster's nodes refuse it each on its own: it then says only that none of them is available.
  if (redis instanceof Cluster) redis.on('node error', saw);
  return { redis, saw, refusal: () => refusal };
}
