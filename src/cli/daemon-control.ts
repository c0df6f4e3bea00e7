import { ConfigError, NetworkError, TimeoutError, UsageError } from '../core/index.ts';
import { HTTP_FACE, type HttpFaceRecord, RunLock, SnapshotStore } from '../store/index.ts';

/** Where a command reaches a running daemon: its HTTP face, and the token that face wants. */
export interface DaemonFace {
  url: string;
  token: string | undefined;
  /** For a line about it: `pid 4242 at http://127.0.0.1:9464`, or the --url given. */
  who: string;
}

/** How long a control request may take: a retry runs handlers, each within its own timeout. */
const REQUEST_TIMEOUT_MS = 60_000;

/** `--url` as given: an http(s) address, with the path a reverse proxy serves the face under, if any. */
export function faceAt(raw: string, token: string | undefined): DaemonFace {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    // Refused below, naming the value.
  }
  if (url && (url.username || url.password)) {
    // Not echoed: what stands before the @ may be a password.
    throw new UsageError("--url: expected the daemon's HTTP address without credentials (the token goes in INDEXBOT_HTTP_TOKEN or http.token)");
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new UsageError(`--url: expected the daemon's HTTP address such as http://127.0.0.1:9464, got ${JSON.stringify(raw)}`);
  }
  const base = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  return { url: base, token, who: base };
}

/**
 * The daemon running on `db` now, reached through the HTTP face it recorded at its start;
 * undefined when no process runs on it. `rerun`: the command to run once it is stopped.
 * `token` is asked for only when that face wants one: with none running, no secret is read.
 */
export function runningFace(db: string, token: () => string | undefined, rerun: string): DaemonFace | undefined {
  const pid = RunLock.holder(db);
  if (pid === undefined) return undefined;
  const store = SnapshotStore.open(db, { readonly: true });
  let face: HttpFaceRecord | undefined;
  try {
    face = store.runtime<HttpFaceRecord>(HTTP_FACE)?.value;
  } finally {
    store.close();
  }
  if (face?.pid !== pid) throw new ConfigError(`pid ${pid} runs on ${db} and recorded no HTTP face yet: try again once it has started, or stop it and run ${rerun}`);
  if (face.url === null) {
    throw new ConfigError(`pid ${pid} runs on ${db} with no HTTP face: restart it with --http (or http.listen) to steer it while it runs, or stop it and run ${rerun}`);
  }
  const bearer = face.token ? token() : undefined;
  if (face.token && bearer === undefined) {
    throw new ConfigError(`pid ${pid}'s HTTP face at ${face.url} wants its http.token: pass the --config it runs with, or set INDEXBOT_HTTP_TOKEN`);
  }
  // Bound to every address, it answers on loopback too.
  const url = face.url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
  return { url, token: bearer, who: `pid ${pid} at ${url}` };
}

/** POSTs a control route of the daemon's HTTP face and returns its JSON answer. */
export function postControl<T>(face: DaemonFace, path: string): Promise<T> {
  return askDaemon<T>(face, 'POST', path);
}

/** GETs a route of the daemon's HTTP face (`/api/v1/status`) and returns its JSON answer. */
export function getFromDaemon<T>(face: DaemonFace, path: string): Promise<T> {
  return askDaemon<T>(face, 'GET', path);
}

/** Each refusal becomes one line naming what to fix: the token, an unknown strategy, the address. */
async function askDaemon<T>(face: DaemonFace, method: 'GET' | 'POST', path: string): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`${face.url}${path}`, {
      method,
      ...(method === 'POST' ? { body: '{}' } : {}),
      headers: { ...(method === 'POST' ? { 'Content-Type': 'application/json' } : {}), ...(face.token === undefined ? {} : { Authorization: `Bearer ${face.token}` }) },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      redirect: 'error',
    });
  } catch (e) {
    if ((e as Error).name === 'TimeoutError') throw new TimeoutError(`${method} ${path}`, REQUEST_TIMEOUT_MS, face.who);
    const cause = (e as { cause?: { code?: string } }).cause;
    throw new NetworkError(`${method} ${path}`, cause?.code, face.who);
  }
  const body = (await res.json().catch(() => ({}))) as T & { error?: string };
  if (res.ok) return body;
  const said = typeof body.error === 'string' ? body.error : `HTTP ${res.status}`;
  if (res.status === 404 && path.startsWith('/api/v1/strategies/')) throw new UsageError(`${face.who}: ${said}`);
  if (res.status === 401) throw new ConfigError(`${face.who}: ${said}: pass the --config whose http.token it runs with, or set INDEXBOT_HTTP_TOKEN`);
  throw new ConfigError(`${face.who} refused ${method} ${path} (HTTP ${res.status}): ${said}`);
}
