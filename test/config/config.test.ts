import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { ConfigError, UsageError } from '../../src/core/index.ts';
import { caught } from '../helpers/caught.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

function file(content: unknown): string {
  const path = join(dirname(tempDbPath()), 'indexbot.json');
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

const fail = (fn: () => unknown) => caught<ConfigError>(fn);

describe('loadConfig', () => {
  it('reads the example config', () => {
    const c = loadConfig({ config: 'config/indexbot.example.json' }, {});
    expect(c).toMatchObject({ baseUrl: 'http://127.0.0.1:7420/v1', tier: 'basic', indexes: ['sindex', 'mindex', 'dindex', 'nindex'], driftThreshold: 0.02 });
    expect(c.intervalsMs.rebalancing).toBe(15_000);
  });

  it('lets flags win over the environment and the environment over the file', () => {
    const path = file({ baseUrl: 'http://file/v1', db: 'file.db', tier: 'public' });
    const env = { INDEXBOT_BASE_URL: 'http://env/v1', INDEXBOT_DB: 'env.db', INDEXBOT_TIER: 'basic', INDEXBOT_API_KEY: 'k' };
    expect(loadConfig({ config: path }, env)).toMatchObject({ baseUrl: 'http://env/v1', db: 'env.db', tier: 'basic', apiKey: 'k' });
    expect(loadConfig({ config: path, baseUrl: 'http://flag/v1', db: 'flag.db', tier: 'premium' }, env)).toMatchObject({ baseUrl: 'http://flag/v1', db: 'flag.db', tier: 'premium' });
  });

  it('reads the log level and format from flag, environment or file, and refuses an unknown one', () => {
    const path = file({ baseUrl: 'http://x/v1', log: { level: 'warn', format: 'json' } });
    expect(loadConfig({ config: path }, {})).toMatchObject({ logLevel: 'warn', logFormat: 'json' });
    expect(loadConfig({ config: path }, { INDEXBOT_LOG_LEVEL: 'debug', INDEXBOT_LOG_FORMAT: 'pretty' })).toMatchObject({ logLevel: 'debug', logFormat: 'pretty' });
    expect(loadConfig({ config: path, logLevel: 'error' }, { INDEXBOT_LOG_LEVEL: 'debug' }).logLevel).toBe('error');
    expect(loadConfig({ baseUrl: 'http://x/v1' }, {}).logLevel).toBe('info');
    // Each refusal names where the value came from: the variable, the flag (a usage error) or the file's key.
    expect(fail(() => loadConfig({ config: path }, { INDEXBOT_LOG_LEVEL: 'verbose' })).message).toBe('INDEXBOT_LOG_LEVEL: expected one of trace, debug, info, warn, error, got "verbose"');
    expect(fail(() => loadConfig({ config: path }, { INDEXBOT_LOG_FORMAT: 'xml' })).message).toBe('INDEXBOT_LOG_FORMAT: expected json or pretty, got "xml"');
    const flag = fail(() => loadConfig({ config: path, logLevel: 'loud' }, {}));
    expect([flag.constructor.name, flag.message]).toEqual(['UsageError', '--log-level: expected one of trace, debug, info, warn, error, got "loud"']);
    const inFile = fail(() => loadConfig({ config: file({ baseUrl: 'http://x/v1', log: { level: 'loud' } }) }, {}));
    expect(inFile).toBeInstanceOf(ConfigError);
    expect(inFile.message).toMatch(/indexbot\.json: log\.level: Invalid option: expected one of "trace"/);
  });

  it('defaults intervals by tier and the tier by credential', () => {
    expect(loadConfig({ baseUrl: 'http://x/v1' }, {}).tier).toBe('public');
    expect(loadConfig({ baseUrl: 'http://x/v1' }, { INDEXBOT_API_KEY: 'k' }).intervalsMs.rebalancing).toBe(15_000);
    expect(loadConfig({ baseUrl: 'http://x/v1' }, { INDEXBOT_WALLET_KEYPAIR: '/k.json' }).tier).toBe('standard');
  });

  it('names the file and the key of each problem', () => {
    const path = file({ baseUrl: 'http://x/v1', intervals: { composition: -5, bogus: 1 }, detect: {}, indexes: ['Bad Id'] });
    const err = fail(() => loadConfig({ config: path }, {}));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain(path);
    expect(err.message).toContain('unknown key "detect"');
    expect(err.message).toContain('unknown key "intervals.bogus"');
    expect(err.message).toMatch(/intervals\.composition: /);
    expect(err.message).toMatch(/indexes\.0: an index id is a lowercase slug/);
  });

  it('says what "indexes" takes when it is neither "all" nor a list (found by trial 25: "Invalid input")', () => {
    for (const indexes of ['sindex', 5, { sindex: true }]) {
      const path = file({ baseUrl: 'http://x/v1', indexes });
      expect(fail(() => loadConfig({ config: path }, {})).message).toBe(`${path}: indexes: expected "all" or a list of index ids, such as ["sindex", "mindex"]`);
    }
  });

  it('reports a file that is not JSON, a missing explicit file, a bad tier and no base URL', () => {
    expect(fail(() => loadConfig({ config: file('{ nope') }, {})).message).toMatch(/not valid JSON/);
    // Where it is as an editor shows it, not only a character position (trial 32: "at position 66").
    expect(fail(() => loadConfig({ config: file('{\n  "db": "x.db",\n  "tier": "basic",\n}\n') }, {})).message).toMatch(/at position 37 \(line 4 column 1\)\)$/);
    expect(fail(() => loadConfig({ config: '/nonexistent/indexbot.json' }, {})).message).toMatch(/cannot read config file .*ENOENT/);
    expect(fail(() => loadConfig({ baseUrl: 'http://x/v1', tier: 'gold' }, {})).message).toMatch(/^--tier: expected one of public, standard, .*, got "gold"$/);
    expect(fail(() => loadConfig({ config: file({ baseUrl: 'http://x/v1' }) }, { INDEXBOT_TIER: 'gold' })).message).toMatch(/^INDEXBOT_TIER: expected one of public, standard/);
    expect(fail(() => loadConfig({ config: file({}) }, {})).message).toMatch(/no base URL/);
    // A flag's bad value is a usage error (exit 64) naming the flag; a variable's or the file's a configuration error naming it.
    const badUrl = fail(() => loadConfig({ baseUrl: 'ftp://x' }, {}));
    expect(badUrl).toBeInstanceOf(UsageError);
    expect(badUrl.message).toBe('--base-url: expected an http(s) URL such as https://host/v1, got "ftp://x"');
    expect(fail(() => loadConfig({ baseUrl: 'http://[::1' }, {}))).toBeInstanceOf(UsageError);
    const envUrl = fail(() => loadConfig({}, { INDEXBOT_BASE_URL: 'notaurl' }));
    expect([envUrl.constructor, envUrl.message]).toEqual([ConfigError, 'INDEXBOT_BASE_URL: expected an http(s) URL such as https://host/v1, got "notaurl"']);
    // Without the version segment every route was a 404 that named no setting.
    const unversioned = fail(() => loadConfig({ baseUrl: 'http://127.0.0.1:47931' }, {}));
    expect([unversioned.constructor, unversioned.message]).toEqual([
      UsageError,
      `--base-url: expected the API's base URL, ending in its version segment /v1 (such as http://127.0.0.1:47931/v1), got "http://127.0.0.1:47931"`,
    ]);
    expect(fail(() => loadConfig({ config: file({ baseUrl: 'http://x/api' }) }, {}))).toBeInstanceOf(ConfigError);
    expect(loadConfig({ baseUrl: 'http://x/proxy/v1/' }, {}).baseUrl).toBe('http://x/proxy/v1/');
    const withSecret = fail(() => loadConfig({ baseUrl: 'https://me:hunter22@host/v1' }, {}));
    expect(withSecret.message).toBe('--base-url: expected a URL without credentials (the API key goes in INDEXBOT_API_KEY)');
    const badListen = fail(() => loadConfig({ baseUrl: 'http://x/v1', http: '127.0.0.1:99999' }, {}));
    expect([badListen.constructor, badListen.message]).toEqual([UsageError, '--http: expected host:port such as 127.0.0.1:9464, got "127.0.0.1:99999"']);
    expect(fail(() => loadConfig({ config: file({ baseUrl: 'http://x/v1', http: { listen: 'nope' } }) }, {}))).toBeInstanceOf(ConfigError);
    expect(fail(() => loadConfig({ baseUrl: 'http://x/v1', tier: 'enterprise' }, {})).message).toMatch(/enterpriseLimits/);
  });
});

describe('strategy settings', () => {
  it('reads onStrategyError and the strategies block, with --strategies winning over the file', () => {
    const path = file({ baseUrl: 'http://x/v1', onStrategyError: 'skip', strategies: { dir: 'mine', params: { a: { n: 1 } }, paper: { cash: 500 } } });
    const c = loadConfig({ config: path }, {});
    expect(c.strategies).toMatchObject({ dir: 'mine', explicit: true, onError: 'skip', params: { a: { n: 1 } }, paper: { initialCash: 500, feeBps: 10, slippageBps: 5 } });
    expect(loadConfig({ config: path, strategies: 'flagged' }, { INDEXBOT_STRATEGIES: 'env' }).strategies.dir).toBe('flagged');
    expect(loadConfig({ config: path }, { INDEXBOT_STRATEGIES: 'env' }).strategies.dir).toBe('env');
    expect(loadConfig({ baseUrl: 'http://x/v1' }, {}).strategies).toMatchObject({ dir: 'strategies', explicit: false, onError: 'fail' });
  });

  it('checks strategy names strictly against the directory the file names, and only warns in a process run on another (a shared config)', () => {
    const path = file({ baseUrl: 'http://x/v1', strategies: { dir: 'mine', params: { a: { n: 1 } } } });
    expect(loadConfig({ config: path }, {}).strategies.onUnknownName).toBe('fail');
    expect(loadConfig({ config: path, strategies: './mine' }, {}).strategies.onUnknownName).toBe('fail');
    expect(loadConfig({ config: path, strategies: 'theirs' }, {}).strategies.onUnknownName).toBe('warn');
    expect(loadConfig({ config: path }, { INDEXBOT_STRATEGIES: 'theirs' }).strategies.onUnknownName).toBe('warn');
    // A file that names no directory speaks for whichever this process runs.
    expect(loadConfig({ config: file({ baseUrl: 'http://x/v1' }), strategies: 'theirs' }, {}).strategies.onUnknownName).toBe('fail');
    expect(fail(() => loadConfig({ config: file({ baseUrl: 'http://x/v1', onStrategyError: 'ignore' }) }, {})).message).toMatch(/onStrategyError/);
  });
});

describe('alert sinks in the config', () => {
  const base = { baseUrl: 'http://x/v1' };
  it('names sinks by type, reads env: secrets, and keeps filters', () => {
    const path = file({
      ...base,
      alerts: {
        giveUpAfterHours: 2,
        sinks: [
          { type: 'slack', url: 'env:SLACK_URL', filter: { minWeightChange: 0.01 } },
          { type: 'webhook', url: 'http://127.0.0.1:9/a', secret: 'env:HOOK_SECRET' },
          { type: 'webhook', name: 'ops', url: 'http://127.0.0.1:9/b' },
        ],
      },
    });
    const c = loadConfig({ config: path }, { SLACK_URL: 'https://hooks.slack.com/services/T/B/X', HOOK_SECRET: 's3cret' });
    expect(c.alerts.giveUpAfterMs).toBe(7_200_000);
    expect(c.alerts.sinks).toEqual([
      { type: 'slack', name: 'slack', url: 'https://hooks.slack.com/services/T/B/X', filter: { minWeightChange: 0.01 } },
      { type: 'webhook', name: 'webhook-2', url: 'http://127.0.0.1:9/a', secret: 's3cret', filter: undefined },
      { type: 'webhook', name: 'ops', url: 'http://127.0.0.1:9/b', secret: undefined, filter: undefined },
    ]);
  });

  it('refuses a missing env secret, a URL that is not http(s), and two sinks of one name, without echoing the value', () => {
    const sinks = (s: unknown[]) => file({ ...base, alerts: { sinks: s } });
    expect(fail(() => loadConfig({ config: sinks([{ type: 'slack', url: 'env:NOPE' }]) }, {})).message).toContain('alerts.sinks.0.url: environment variable NOPE is not set');
    const bad = fail(() => loadConfig({ config: sinks([{ type: 'discord', url: 'ftp://secret-path' }]) }, {}));
    expect(bad.message).toContain('alerts.sinks.0.url: expected an http(s) URL');
    expect(bad.message).not.toContain('secret-path');
    expect(fail(() => loadConfig({ config: sinks([{ type: 'console' }, { type: 'slack', name: 'console', url: 'http://a/b' }]) }, {})).message).toContain('two sinks are named "console"');
    expect(fail(() => loadConfig({ config: sinks([{ type: 'pager' }]) }, {}))).toBeInstanceOf(ConfigError);
    const filter = fail(() =>
      loadConfig(
        {
          config: sinks([
            { type: 'console', filter: { strategyAlerts: 'yes' } },
            { type: 'telegram', botToken: 't', chatId: {} },
          ]),
        },
        {},
      ),
    );
    expect(filter.message).toContain('alerts.sinks.0.filter.strategyAlerts: expected true, false or a list of strategy names');
    expect(filter.message).toContain('alerts.sinks.1.chatId: expected a chat id, a number or a string');
  });

  it('asks a command that never talks to the server (backtest, research, status) for none of the secrets the bot reads from the environment', () => {
    const config = file({
      ...base,
      alerts: { sinks: [{ type: 'slack', url: 'env:NOPE_SLACK' }] },
      http: { listen: '127.0.0.1:0', token: 'env:NOPE_TOKEN' },
      rateLimit: { redis: 'env:NOPE_REDIS' },
    });
    const offline = loadConfig({ config }, {}, { server: false, services: false });
    expect(offline.alerts.sinks).toEqual([]);
    expect(offline.http).toBeUndefined();
    expect(offline.redisUrl).toBeUndefined();
    // The bot itself still needs them, and says which; so does a strategies runner, which serves HTTP and sends alerts.
    expect(fail(() => loadConfig({ config }, {})).message).toContain('environment variable NOPE_');
    expect(fail(() => loadConfig({ config }, {}, { server: false })).message).toContain('environment variable NOPE_');
  });

  it('reads retentionDays, 30 by default, 0 to keep everything, never negative', () => {
    expect(loadConfig({ baseUrl: 'http://x/v1' }, {}).retentionDays).toBe(30);
    expect(loadConfig({ config: file({ ...base, retentionDays: 0 }) }, {}).retentionDays).toBe(0);
    expect(fail(() => loadConfig({ config: file({ ...base, retentionDays: -1 }) }, {})).message).toContain('retentionDays: Too small');
  });
});

describe('bounds of every number (issue 13 item 14)', () => {
  const base = { baseUrl: 'http://x/v1' };
  it.each([
    [{ alerts: { giveUpAfterHours: 1e308 } }, 'alerts.giveUpAfterHours'],
    [{ strategies: { timeoutMs: 2 ** 31 } }, 'strategies.timeoutMs'],
    [{ shutdownGraceMs: 1e12 }, 'shutdownGraceMs'],
    [{ rateWindowMs: 1e12 }, 'rateWindowMs'],
    [{ retentionDays: 1e308 }, 'retentionDays'],
    [{ intervals: { rebalancing: 1e-9 } }, 'intervals.rebalancing'],
    [{ enterpriseLimits: { limit: 1e15, burst: 10 } }, 'enterpriseLimits.limit'],
    [{ strategies: { paper: { cash: 1e300 } } }, 'strategies.paper.cash'],
    [{ strategies: { paper: { feeBps: 1_000_000 } } }, 'strategies.paper.feeBps'],
    [{ strategies: { paper: { slippageBps: 20_000 } } }, 'strategies.paper.slippageBps'],
  ])('refuses %j, naming %s', (extra, key) => {
    const err = fail(() => loadConfig({ config: file({ ...base, ...extra }) }, {}));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(new RegExp(`${key.replace(/\./g, '\\.')}: Too (big|small)`));
  });

  it('accepts the largest timer-safe values', () => {
    const c = loadConfig({ config: file({ ...base, strategies: { timeoutMs: 2 ** 31 - 1 }, alerts: { giveUpAfterHours: 596 } }) }, {});
    expect(c.strategies.timeoutMs).toBe(2 ** 31 - 1);
    expect(c.alerts.giveUpAfterMs).toBeLessThanOrEqual(2 ** 31 - 1);
  });

  it('reads a file that starts with a UTF-8 byte-order mark', () => {
    const path = file(`\uFEFF${JSON.stringify({ ...base, retentionDays: 7 })}`);
    expect(loadConfig({ config: path }, {}).retentionDays).toBe(7);
  });
});
