import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { pausedStrategies } from '../../src/strategy/index.ts';
import { runCli, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { type HttpDaemon, get, startHttpDaemon } from '../helpers/http-daemon.ts';
import { testSandbox } from '../helpers/sandbox.ts';

const TOKEN = 'a-long-enough-steering-token-42';
let sb: Sandbox;
let d: HttpDaemon;
const config = () => join(d.db, '..', 'indexbot.json');

beforeAll(async () => {
  sb = await testSandbox({ speed: 1, startTime: Date.now(), rateWindowMs: 10_000 });
  d = await startHttpDaemon(sb, { http: { token: 'env:BOT_HTTP_TOKEN' } }, { BOT_HTTP_TOKEN: TOKEN });
}, 60_000);
afterAll(async () => {
  await d.stop();
  sb.close();
});

/** A port nothing listens on: one just freed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const pausedOverHttp = async () => ((await (await get(`${d.url}/api/v1/status`, TOKEN)).json()) as { paused: string[] }).paused;

// Trial 24: pausing a running strategy took curl or Telegram; the CLI had no command for it.
describe('strategies pause and resume from the command line', () => {
  it('steer the daemon running on --db through the HTTP face it recorded, with the config’s token', async () => {
    const pause = await runCli(['strategies', 'pause', 'rebalance-alert', '--config', config()], { BOT_HTTP_TOKEN: TOKEN });
    expect(pause.stderr).toBe('');
    expect(pause.stdout).toMatch(/^rebalance-alert paused \(pid \d+ at http:\/\/127\.0\.0\.1:\d+\)\n$/);
    expect(pause.status).toBe(0);
    expect(await pausedOverHttp()).toEqual(['rebalance-alert']);
    const again = await runCli(['strategies', 'pause', 'rebalance-alert', '--config', config()], { BOT_HTTP_TOKEN: TOKEN });
    expect(again.stdout).toMatch(/^rebalance-alert was paused already /);
    // From elsewhere: the address given, the token from the environment.
    const resume = await runCli(['strategies', 'resume', 'rebalance-alert', '--url', d.url], { INDEXBOT_HTTP_TOKEN: TOKEN });
    expect(resume.stdout).toBe(`rebalance-alert resumed (${new URL(d.url).origin})\n`);
    expect(await pausedOverHttp()).toEqual([]);
    // Retry goes through it too (it was refused, the database being held): nothing parked here.
    const retry = await runCli(['strategies', 'retry', 'rebalance-front-run', '--config', config()], { BOT_HTTP_TOKEN: TOKEN });
    expect(retry.stdout).toMatch(/^0 of 0 parked events delivered; 0 still parked \(pid \d+ at http:\/\/127\.0\.0\.1:\d+\)\n$/);
    expect(retry.status).toBe(0);
    const retryAt = await runCli(['strategies', 'retry', '--url', d.url], { INDEXBOT_HTTP_TOKEN: TOKEN });
    expect(retryAt.stdout).toBe(`0 of 0 parked events delivered; 0 still parked (${new URL(d.url).origin})\n`);
  }, 60_000);

  it('status --url reads a running daemon from elsewhere: text, JSON, and the health check', async () => {
    const text = await runCli(['status', '--url', d.url], { INDEXBOT_HTTP_TOKEN: TOKEN });
    expect(text.stderr).toBe('');
    expect(text.stdout).toContain(`indexbot status  db ${d.db} `);
    expect(text.stdout).toMatch(/^daemon: running \(pid \d+\)$/m);
    expect(text.stdout).toMatch(/^ {2}rebalance-front-run /m);
    const json = JSON.parse((await runCli(['status', '--json', '--url', d.url], { INDEXBOT_HTTP_TOKEN: TOKEN })).stdout);
    expect(json.db).toBe(d.db);
    expect(json.paused).toEqual([]);
    const check = await runCli(['status', '--check', '--url', d.url], { INDEXBOT_HTTP_TOKEN: TOKEN });
    expect(check.stdout).toMatch(/^ok: last successful poll \d+s ago\n$/);
    expect(check.status).toBe(0);
    // A monitor without the token is told so, and fails.
    const refused = await runCli(['status', '--check', '--url', d.url]);
    expect(refused.stderr).toMatch(/^indexbot: \S+: a bearer token is required: pass the --config whose http\.token it runs with, or set INDEXBOT_HTTP_TOKEN \[CONFIG_INVALID\]\n$/);
    expect(refused.status).toBe(78);
  }, 60_000);

  it('name an unknown strategy, a missing or wrong token, and a bad --url in one line each, never echoing the token', async () => {
    const unknown = await runCli(['strategies', 'pause', 'nosuch', '--config', config()], { BOT_HTTP_TOKEN: TOKEN });
    expect(unknown.stderr).toMatch(/^indexbot: pid \d+ at http:\/\/127\.0\.0\.1:\d+: no strategy named "nosuch" is running \[USAGE_INVALID\]\n$/);
    expect(unknown.status).toBe(64);

    const noToken = await runCli(['strategies', 'pause', 'rebalance-alert', '--db', d.db]);
    expect(noToken.stderr).toMatch(
      /^indexbot: pid \d+'s HTTP face at http:\/\/127\.0\.0\.1:\d+ wants its http\.token: pass the --config it runs with, or set INDEXBOT_HTTP_TOKEN \[CONFIG_INVALID\]\n$/,
    );
    expect(noToken.status).toBe(78);

    const wrong = await runCli(['strategies', 'pause', 'rebalance-alert', '--db', d.db], { INDEXBOT_HTTP_TOKEN: `${TOKEN}x` });
    expect(wrong.stderr).toMatch(
      /^indexbot: pid \d+ at \S+: the bearer token is not the one configured \(http\.token\): pass the --config whose http\.token it runs with, or set INDEXBOT_HTTP_TOKEN \[CONFIG_INVALID\]\n$/,
    );
    expect(wrong.stderr).not.toContain(TOKEN);
    expect(wrong.status).toBe(78);

    const badUrl = await runCli(['strategies', 'pause', 'rebalance-alert', '--url', 'ftp://somewhere']);
    expect(badUrl.stderr).toBe('indexbot: --url: expected the daemon\'s HTTP address such as http://127.0.0.1:9464, got "ftp://somewhere" [USAGE_INVALID]\n');
    expect(badUrl.status).toBe(64);

    const closed = await closedPort();
    const refused = await runCli(['strategies', 'pause', 'rebalance-alert', '--url', `http://127.0.0.1:${closed}`]);
    expect(refused.stderr).toBe(`indexbot: network error on POST /api/v1/strategies/rebalance-alert/pause at http://127.0.0.1:${closed} (ECONNREFUSED) [NETWORK_ERROR]\n`);
    expect(refused.status).toBe(75);
    expect(await pausedOverHttp()).toEqual([]);
  }, 60_000);

  it('with no process running, pause the strategy in the database, which the daemon starts paused', async () => {
    expect(await d.stop()).toBe(0);
    const pause = await runCli(['strategies', 'pause', 'drift-reversion', '--config', config()]);
    expect(pause.stderr).toBe('');
    expect(pause.stdout).toBe(`drift-reversion paused in ${d.db}: no process runs on it; the daemon starts it paused when it starts\n`);
    expect(pause.status).toBe(0);
    const typo = await runCli(['strategies', 'pause', 'drift-reversoin', '--config', config()]);
    expect(typo.stderr).toMatch(
      /^indexbot: no strategy named "drift-reversoin" in strategies \(there: [a-z, -]*drift-reversion[a-z, -]*\); pass the --strategies \(or --config\) the daemon runs with \[USAGE_INVALID\]\n$/,
    );
    expect(typo.status).toBe(64);
    const store = SnapshotStore.open(d.db, { readonly: true });
    expect(pausedStrategies(store)).toEqual(['drift-reversion']);
    store.close();
    const status = await runCli(['status', '--json', '--db', d.db]);
    const strategies = JSON.parse(status.stdout).strategies as { strategy: string; paused: boolean }[];
    expect(strategies.find((s) => s.strategy === 'drift-reversion')?.paused).toBe(true);

    // Started again on the same database: the strategy waits, paused, until resumed.
    const again = spawnDaemon(['--config', config(), '--http', '127.0.0.1:0'], { INDEXBOT_API_KEY: sb.keys.premium, BOT_HTTP_TOKEN: TOKEN, INDEXBOT_LOG_LEVEL: 'debug' });
    d = {
      ...d,
      daemon: again,
      url: await waitFor('the http face', () => /"url":"(http:[^"]+)"[^\n]*http face listening/.exec(again.output())?.[1], 30_000),
      stop: async () => {
        again.child.kill('SIGTERM');
        return again.exited;
      },
    };
    expect(await pausedOverHttp()).toEqual(['drift-reversion']);
    const resume = await runCli(['strategies', 'resume', 'drift-reversion', '--config', config()], { BOT_HTTP_TOKEN: TOKEN });
    expect(resume.stdout).toMatch(/^drift-reversion resumed \(pid \d+ at /);
    expect(await pausedOverHttp()).toEqual([]);
  }, 90_000);
});
