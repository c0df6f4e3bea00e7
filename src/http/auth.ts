import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isLoopback } from '../config/index.ts';

/**
 * A request's bearer token against the configured one: none given, wrong, or right. Compared
 * in constant time (both hashed first, so neither the length nor the first differing byte
 * shows in the timing); whether one was given at all is the caller's own knowledge.
 */
export function bearerCheck(req: IncomingMessage, token: string): 'ok' | 'missing' | 'wrong' {
  const header = req.headers.authorization;
  const given = typeof header === 'string' && /^Bearer /i.test(header) ? header.slice(7).trim() : '';
  if (given.length === 0) return 'missing';
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b) ? 'ok' : 'wrong';
}

/**
 * Without a token the server answers loopback names only: a web page that rebinds its own
 * domain to 127.0.0.1 still sends its own name as Host, and is refused.
 */
export function hostIsLoopback(req: IncomingMessage): boolean {
  const host = req.headers.host;
  if (typeof host !== 'string') return false;
  const name = /^\[([^\]]+)\](?::\d+)?$/.exec(host)?.[1] ?? host.replace(/:\d+$/, '');
  return isLoopback(name.toLowerCase());
}

/**
 * A request a browser sent on behalf of another site. Browsers mark every request with
 * `Sec-Fetch-Site` and cross-origin ones with `Origin`; the control routes refuse both kinds
 * (and there is no CORS, so no other site can read an answer).
 */
export function isCrossSite(req: IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return true;
  const origin = req.headers.origin;
  if (typeof origin !== 'string') return false;
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true;
  }
}
