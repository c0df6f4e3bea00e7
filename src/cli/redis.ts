import { Cluster, type Redis } from 'ioredis';
import type { Config } from '../config/index.ts';
import { ConfigError, type Logger } from '../core/index.ts';
import { RedisBudgets } from '../ratelimit/index.ts';
import { type RedisRefusal, probeRedis, redactRedisUrl, refusedSettings } from '../redis/index.ts';

/**
 * The shared rate budget when the config names a Redis, else undefined. It waits a moment for
 * the first connection so a healthy setup starts shared; an unreachable Redis is not a reason
 * not to start (the gates pace to their local share until it answers), one that refuses the
 * credentials is (a ConfigError naming where the URL came from).
 */
export async function openSharedBudgets(config: Config, logger: Logger): Promise<RedisBudgets | undefined> {
  if (!config.redisUrl) return undefined;
  // A refused password or database is a setting to fix: the budget would pace locally for ever, warning.
  const refusal = await refusedSettings(config.redisUrl);
  if (refusal !== undefined) {
    throw new ConfigError(`${config.redisUrlSource ?? 'rateLimit.redis'} ${redactRedisUrl(config.redisUrl)}: the shared rate budget's Redis refused the ${refusal.what} (${refusal.message})`);
  }
  const budgets = new RedisBudgets({ url: config.redisUrl, logger: logger.child({ component: 'shared-budget' }) });
  const ready = await budgets.ready();
  if (ready) logger.info({ redis: budgets.where, process: budgets.processId }, 'rate budget shared through Redis');
  else logger.warn({ redis: budgets.where }, 'Redis not reachable yet; pacing to a local share of the rate budget until it answers');
  return budgets;
}

export interface RedisCheck {
  ok: boolean;
  detail: string;
  /** A setting that works but can lose the budget or the event stream. */
  warning?: string;
}

/**
 * What `doctor` says of the configured Redis: reachable, its version (scripts need 5+, streams
 * 5+), and an eviction policy that cannot drop the budget's or the stream's keys; of a cluster,
 * each master's (any of them may hold our keys).
 */
export async function checkRedis(url: string, timeoutMs = 3_000): Promise<RedisCheck> {
  const where = redactRedisUrl(url);
  const probe = probeRedis(url, timeoutMs);
  const { redis } = probe;
  try {
    await redis.connect();
    // A database number past the server's: connected all the same, in database 0.
    const settingRefused = probe.refusal();
    if (settingRefused !== undefined) return { ok: false, detail: refusedDetail(where, settingRefused) };
    const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
    const facts = await Promise.all(servers.map(serverFacts));
    const version = facts.map((f) => f.version).sort(compareVersions)[0] ?? 'unknown';
    const policies = [...new Set(facts.map((f) => f.policy))];
    const policy = policies.find((p) => p !== 'noeviction' && p !== undefined) ?? policies[0];
    if (!(Number(version.split('.')[0]) >= 5)) return { ok: false, detail: `${where}: Redis ${version}; scripts with TIME and streams need Redis 5 or newer` };
    const what = redis instanceof Cluster ? `Redis Cluster of ${servers.length} master(s), lowest version ${version}` : `Redis ${version}`;
    const detail = `${where}: ${what}, maxmemory-policy ${policy ?? 'not readable (CONFIG disabled)'}`;
    // The budget keys carry a TTL (volatile-* may evict them) and the stream none (allkeys-* may): only noeviction keeps both.
    if (policy !== undefined && policy !== 'noeviction') {
      return { ok: true, detail, warning: `maxmemory-policy ${policy} may evict the shared budget (then refilled in full) or the event stream under memory pressure; set noeviction` };
    }
    return { ok: true, detail };
  } catch (e) {
    probe.saw(e);
    const refusal = probe.refusal();
    if (refusal !== undefined) return { ok: false, detail: refusedDetail(where, refusal) };
    return { ok: false, detail: `${where}: not reachable (${e instanceof Error ? e.message : String(e)})` };
  } finally {
    redis.disconnect();
  }
}

async function serverFacts(server: Redis): Promise<{ version: string; policy: string | undefined }> {
  const info = String(await server.info('server'));
  const [, policy] = (await server.config('GET', 'maxmemory-policy').catch(() => [])) as string[];
  return { version: /redis_version:([\d.]+)/.exec(info)?.[1] ?? 'unknown', policy };
}

const compareVersions = (a: string, b: string) => {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < Math.max(x!.length, y!.length); i++) if ((x![i] ?? 0) !== (y![i] ?? 0)) return (x![i] ?? 0) - (y![i] ?? 0);
  return 0;
};

function refusedDetail(where: string, refusal: RedisRefusal): string {
  return `${where}: ${refusal.what === 'credentials' ? 'authentication failed' : 'database number refused'} (${refusal.message})`;
}
