import { existsSync, mkdtempSync, rmdirSync, statSync, statfsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { HttpSender, testAlert, unmatchableFilterNames } from '../alerts/index.ts';
import type { IndexClient } from '../api/index.ts';
import { type Config, type ConfigFlags, loadConfig, permissionWarnings, resolveRedisUrl } from '../config/index.ts';
import { TIER_LIMITS, tierLimits } from '../contract/index.ts';
import { ForbiddenError, IndexbotError, StoreError, WHY_NOT_WRITABLE, silentLogger } from '../core/index.ts';
import { SCHEMA_VERSION, SnapshotStore } from '../store/index.ts';
import { STALE_READ_S, STREAM_HEARTBEAT, type StreamHeartbeat } from '../stream/index.ts';
import { loadStrategies } from '../strategy/index.ts';
import { createClient, withStoredSignIn } from './daemon.ts';
import { checkRedis } from './redis.ts';
import { ROLES, type Role, parseRole } from './roles.ts';
import { SERVER_FLAGS, withConfigFlags } from './options.ts';

type Verdict = 'PASS' | 'WARN' | 'FAIL';
interface Check {
  verdict: Verdict;
  name: string;
  detail: string;
}

/** Below this, a full disk is near enough to say so: polls would start failing with STORE_FULL. */
const MIN_FREE_BYTES = 1024 ** 3;
const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(2)} GiB`;

const explain = (e: unknown) => (e instanceof IndexbotError ? `${e.message} [${e.code}]` : (e as Error).message);

/** `dir` or, when it does not exist yet, the first of its parents that does. */
function nearestDirectory(dir: string): string {
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/** Why nothing can be made in `dir`, or undefined when something can: made and removed at once, as access(W_OK) passed /proc, where nothing can be made (trial 25). */
function whyNotWritable(dir: string): string | undefined {
  try {
    rmdirSync(mkdtempSync(join(dir, '.indexbot-doctor-')));
    return undefined;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    // ENOENT making a file in a directory that exists: /proc, /sys.
    return code === 'ENOENT' ? 'a /proc or /sys path' : (WHY_NOT_WRITABLE[code] ?? code);
  }
}

/**
 * Each check says what it found in plain words; one that cannot run because an earlier one
 * failed says so rather than failing again.
 */
export async function runDoctor(config: Config, options: { sendTest?: boolean; now?: () => number; eventsUrl?: string; role?: Role } = {}): Promise<Check[]> {
  // A runner calls no API and draws on no rate budget: those checks would only fail on its host (trial 29).
  const runner = options.role === 'strategies';
  const checks: Check[] = [{ verdict: 'PASS', name: 'config', detail: config.file ? `loaded ${config.file}` : 'no config file; environment and flags only' }];
  const add = (verdict: Verdict, name: string, detail: string) => checks.push({ verdict, name, detail });
  for (const w of permissionWarnings(config)) add('WARN', 'file permissions', w);
  if (config.httpUnused) add('WARN', 'http', config.httpUnused);

  let store: SnapshotStore | undefined;
  try {
    let beside = dirname(config.db);
    let size = 0;
    if (existsSync(config.db)) {
      store = SnapshotStore.open(config.db);
      const integrity = store.integrityCheck();
      store.setRuntime('doctor', { checkedAt: (options.now ?? Date.now)() }, (options.now ?? Date.now)());
      // The file takes writes while SQLite reuses its journal; a restart also needs the directory, for the lock's pid file (trial 32: PASS, then exit 70 at the restart).
      const directory = whyNotWritable(beside);
      if (directory !== undefined) {
        add('FAIL', 'database', `${config.db}: its directory ${beside} is not writable (${directory}): the next start cannot take the lock`);
      } else {
        add(integrity === 'ok' ? 'PASS' : 'FAIL', 'database', `${config.db}: writable, schema ${store.schemaVersion} of ${SCHEMA_VERSION}, integrity ${integrity}`);
      }
      size = statSync(config.db).size;
    } else {
      // Nothing is made at a path with no database (a mistyped --db would be left behind): `run` makes it.
      beside = nearestDirectory(dirname(resolve(config.db)));
      const why = whyNotWritable(beside);
      if (why !== undefined) throw new StoreError(`no database at ${config.db}, and nothing can be made in ${beside} (${why}): \`indexbot run\` could not make one there`, 'STORE_UNAVAILABLE');
      add(
        'WARN',
        'database',
        `no database at ${config.db} yet (doctor made none): the first \`indexbot run\` makes it${beside === dirname(resolve(config.db)) ? '' : ' and its folders'} (${beside} is writable); check the path if you expected one`,
      );
      // The server check keeps what a sign-in gives in memory only.
      store = SnapshotStore.open(':memory:');
    }
    const { bavail, bsize } = statfsSync(beside);
    const free = bavail * bsize;
    const retention = config.retentionDays > 0 ? `snapshots kept ${config.retentionDays} days` : 'retentionDays 0: snapshots are never pruned';
    add(free < MIN_FREE_BYTES ? 'WARN' : 'PASS', 'disk', `${gib(free)} free beside the database (file ${gib(size)}; ${retention})`);
  } catch (e) {
    add('FAIL', 'database', explain(e));
  }

  try {
    if (runner) {
      add('PASS', 'server', 'not checked: a runner (--role strategies) calls no API; its collector does');
      const beat = store?.runtime<StreamHeartbeat>(STREAM_HEARTBEAT);
      if (beat) {
        const { group, lag, pending } = beat.value;
        const ageS = Math.round(((options.now ?? Date.now)() - beat.updatedAt) / 1000);
        // What the database recorded, not what this doctor read: a pass only while it is the runner's present (trial 33: PASS from a record, beside a FAIL for the same Redis).
        add(
          ageS <= STALE_READ_S ? 'PASS' : 'WARN',
          'stream reads',
          `as the database recorded: group ${group}, lag ${lag ?? 'unknown'}, pending ${pending ?? 'unknown'} at its last answered read, ${ageS} s ago${ageS <= STALE_READ_S ? '' : ': no runner reads now, or its Redis does not answer'}`,
        );
      }
    } else if (!store && !config.apiKey) {
      add('FAIL', 'server', 'not checked: the database is needed to keep tokens');
    } else {
      // An API key keeps no tokens: the server is checked whatever the database's state (trial 35: skipped on a read-only directory).
      store ??= SnapshotStore.open(':memory:');
      let client: IndexClient | undefined;
      config = withStoredSignIn(config, store);
      try {
        client = createClient(config, store, silentLogger);
      } catch (e) {
        // A keypair that cannot be read: said among the other checks, which go on (trial 25: doctor printed that line alone).
        add('FAIL', 'credentials', explain(e));
      }
      if (client) await checkServer(config, client, add);
    }
  } finally {
    store?.close();
  }

  if ((options.role === 'collector' || runner) && !options.eventsUrl)
    add('FAIL', 'event stream', `--role ${options.role} needs the event stream's Redis: --events redis://host:6379 or INDEXBOT_EVENTS_URL`);
  if (config.redisUrl && !runner) {
    const redis = await checkRedis(config.redisUrl);
    add(redis.ok ? (redis.warning ? 'WARN' : 'PASS') : 'FAIL', 'redis', redis.warning ? `${redis.detail}: ${redis.warning}` : redis.detail);
  }
  // A collector's or a runner's stream (--events or INDEXBOT_EVENTS_URL), which may be another Redis.
  if (options.eventsUrl) {
    const stream = await checkRedis(options.eventsUrl);
    add(stream.ok ? (stream.warning ? 'WARN' : 'PASS') : 'FAIL', 'event stream', stream.warning ? `${stream.detail}: ${stream.warning}` : stream.detail);
  }

  try {
    const warnings: string[] = [];
    const strategies = await loadStrategies(config.strategies.dir, {
      params: config.strategies.params,
      disabled: config.strategies.disabled,
      explicit: config.strategies.explicit,
      onUnknownName: config.strategies.onUnknownName,
      logger: { ...silentLogger, warn: (_obj, msg) => warnings.push(msg ?? '') },
    });
    const loaded =
      strategies.length === 0
        ? `none in ${config.strategies.dir}`
        : `${strategies.map((s) => s.strategy.name).join(', ')} ${strategies.length === 1 ? 'loads and its params are' : 'load and their params are'} valid`;
    add(warnings.length > 0 ? 'WARN' : 'PASS', 'strategies', [loaded, ...warnings].join('; '));
    const unmatchable = unmatchableFilterNames(
      config.alerts.sinks,
      strategies.map((s) => s.strategy.name),
      config.indexes === 'all' ? undefined : config.indexes,
    );
    if (unmatchable.length > 0) add('WARN', 'alert filters', unmatchable.join('; '));
  } catch (e) {
    add('FAIL', 'strategies', explain(e));
  }

  if (config.alerts.sinks.length === 0) add('PASS', 'alert sinks', 'none configured');
  // A console sink's test message is printed, as its alerts are: on stderr, beside the check lines (stdout may be --json).
  const sender = new HttpSender(10_000, (line) => process.stderr.write(line));
  for (const sink of config.alerts.sinks) {
    if (!options.sendTest) {
      add('PASS', `sink ${sink.name}`, `${sink.type} configured (--send-test sends a test message)`);
      continue;
    }
    const outcome = await sender.send(sink, testAlert('doctor', (options.now ?? Date.now)()));
    add(outcome.ok ? 'PASS' : 'FAIL', `sink ${sink.name}`, outcome.ok ? `${sink.type}: test message accepted` : `${sink.type}: ${outcome.reason}`);
  }
  return checks;
}

async function checkServer(config: Config, client: IndexClient, add: (v: Verdict, name: string, detail: string) => void): Promise<void> {
  const credential = config.apiKey ? 'API key' : config.walletKeypairPath ? 'wallet sign-in' : config.storedSignIn ? 'wallet sign-in kept by `indexbot login`' : undefined;
  let first: string | undefined;
  try {
    const page = await client.listIndexes({ limit: 1 });
    first = page.items[0]?.id;
    add('PASS', 'server', `${config.baseUrl} answers (${page.total ?? page.items.length} indexes listed)`);
    add('PASS', 'credentials', credential ? `${credential} accepted` : 'none (set INDEXBOT_API_KEY for a key, or INDEXBOT_WALLET_KEYPAIR and run `indexbot login`): public tier');
  } catch (e) {
    if (e instanceof ForbiddenError) {
      add('PASS', 'server', `${config.baseUrl} answers`);
      add('FAIL', 'permissions', `the ${credential ?? 'public access'} lacks read:index, which polling needs: ${explain(e)}`);
    } else {
      add('FAIL', e instanceof IndexbotError && e.code === 'API_UNAUTHORIZED' ? 'credentials' : 'server', explain(e));
    }
    return;
  }
  if (first) {
    try {
      await client.getComposition(first);
      add('PASS', 'permissions', `read:index granted (composition of ${first})`);
    } catch (e) {
      add('FAIL', 'permissions', e instanceof ForbiddenError ? `the ${credential ?? 'public access'} lacks read:index, which polling needs: ${explain(e)}` : explain(e));
    }
  }
  if (credential) {
    try {
      await client.getPortfolio();
      add('PASS', 'permissions', 'read:portfolio granted');
    } catch (e) {
      add(e instanceof ForbiddenError ? 'WARN' : 'FAIL', 'permissions', e instanceof ForbiddenError ? `read:portfolio not granted (only portfolio features need it)` : explain(e));
    }
  }
  const configured = tierLimits(config.tier, config.enterpriseLimits).limit;
  const gate = client.rateGates()[0];
  if (!gate || gate.remaining === undefined) add('WARN', 'rate limits', 'the server sent no X-RateLimit-* headers; pacing to the configured tier alone');
  else if (gate.limit < configured && !credential)
    add(
      'FAIL',
      'rate limits',
      `with no credential the server allows the public tier's ${gate.limit} requests per window, the config says tier ${config.tier} (${configured}): set INDEXBOT_API_KEY to a key of that tier, or "tier": "public"`,
    );
  else if (gate.limit < configured)
    add(
      'FAIL',
      'rate limits',
      `the server allows ${gate.limit} requests per window, ${config.tierExplicit ? 'the config says' : 'none being set, the credential implies'} tier ${config.tier} (${configured}): set the tier the ${config.apiKey ? 'key' : 'credential'} really has`,
    );
  else if (gate.serverLimit !== undefined && gate.serverLimit > configured) {
    // Paced to the configured tier, the bot uses a fraction of what the key allows (trial 25: this said "agrees").
    const allowed = gate.serverLimit;
    const tier = Object.entries(TIER_LIMITS).find(([, l]) => l.limit === allowed)?.[0];
    add(
      'WARN',
      'rate limits',
      `the server allows ${allowed} requests per window, more than tier ${config.tier} (${configured}) ${config.tierExplicit ? 'the config says' : 'that the credential implies, none being set'}: set "tier": "${tier ?? 'enterprise'}"${tier ? '' : ' with "enterpriseLimits"'} to use them`,
    );
  } else add('PASS', 'rate limits', `the server's X-RateLimit-Limit agrees with tier ${config.tier} (${configured} per window)`);
}

export function registerDoctorCommand(program: Command): void {
  withConfigFlags(
    program
      .command('doctor')
      .description('check config, server, credentials, permissions, rate limits, database, strategies and alert sinks')
      .option('--send-test', 'send a test message to each alert sink')
      .option('--events <url>', "the event stream's Redis of a collector or runner, to check (or INDEXBOT_EVENTS_URL)")
      .option('--role <role>', `the process checked, as run takes it: ${ROLES.join(', ')} (a runner, strategies, calls no API)`, 'all'),
    ...SERVER_FLAGS,
    'strategies',
  ).action(async (flags: ConfigFlags & { sendTest?: boolean; events?: string; role: string }) => {
    const role = parseRole(flags.role);
    let config: Config;
    let eventsUrl: string | undefined;
    try {
      // A runner needs no base URL: it calls no API.
      config = loadConfig(flags, process.env, role === 'strategies' ? { server: false } : undefined);
      eventsUrl = resolveRedisUrl(
        flags.events ?? process.env.INDEXBOT_EVENTS_URL,
        flags.events === undefined ? 'INDEXBOT_EVENTS_URL' : '--events',
        process.env,
        'the event stream',
        flags.events !== undefined,
      );
    } catch (e) {
      process.stdout.write(`FAIL  config        ${explain(e)}\n`);
      process.exitCode = 1;
      return;
    }
    const checks = await runDoctor(config, { sendTest: flags.sendTest, eventsUrl, role });
    for (const c of checks) process.stdout.write(`${c.verdict}  ${c.name.padEnd(16)} ${c.detail}\n`);
    const failed = checks.filter((c) => c.verdict === 'FAIL').length;
    process.stdout.write(failed === 0 ? 'all checks passed\n' : `${failed} check(s) failed\n`);
    process.exitCode = failed === 0 ? 0 : 1;
  });
}
