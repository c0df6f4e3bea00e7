import type { Sandbox } from '../../src/sandbox/index.ts';
import { type DaemonProcess, sandboxConfig, spawnDaemon, waitFor } from './daemon.ts';
import { tempDbPath } from './temp-db.ts';

export interface HttpDaemon {
  url: string;
  db: string;
  daemon: DaemonProcess;
  stop(): Promise<number | null>;
}

/**
 * `indexbot run --http 127.0.0.1:0` against a sandbox, with the example strategies; resolves once
 * the HTTP face listens and the first rebalancing polls are stored.
 */
export async function startHttpDaemon(sb: Sandbox, extra: Record<string, unknown> = {}, env: Record<string, string> = {}, listen = '127.0.0.1:0'): Promise<HttpDaemon> {
  const db = tempDbPath();
  const config = sandboxConfig(sb, db, {
    indexes: ['dindex', 'mindex'],
    intervals: { rebalancing: 1, composition: 1, performance: 2, indexes: 30, tokens: 30 },
    shutdownGraceMs: 3_000,
    strategies: { dir: 'strategies' },
    ...extra,
  });
  const daemon = spawnDaemon(['--config', config, '--http', listen], { INDEXBOT_API_KEY: sb.keys.premium, INDEXBOT_LOG_LEVEL: 'debug', ...env });
  const url = await waitFor('the http face', () => /"url":"(http:[^"]+)"[^\n]*http face listening/.exec(daemon.output())?.[1], 30_000);
  return {
    url,
    db,
    daemon,
    async stop() {
      daemon.child.kill('SIGTERM');
      return daemon.exited;
    },
  };
}

/** A request with the token as a bearer header, if given. */
export async function get(url: string, token?: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { headers: { ...(token ? { Authorization: `Bearer ${token}` } : {}), ...headers } });
}

export async function post(url: string, token?: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}), ...headers } });
}
