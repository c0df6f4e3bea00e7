/**
 * Reading rate-limit headers defensively: a real server may omit them, send them on some
 * responses only, or send nonsense. Each reader returns undefined for anything unusable.
 */
export type HeaderBag = Record<string, unknown>;

function header(headers: HeaderBag, name: string): string | undefined {
  const v = headers[name] ?? headers[name.toLowerCase()];
  if (Array.isArray(v)) return v.length > 0 ? String(v[0]) : undefined;
  return v === undefined || v === null ? undefined : String(v);
}

function nonNegativeInt(raw: string | undefined): number | undefined {
  if (raw === undefined || !/^\s*\d+\s*$/.test(raw)) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** IMF-fixdate, the only date form `Retry-After` may carry (RFC 9110). */
const HTTP_DATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

export interface RateLimitObservation {
  /** Requests allowed per window, as the server states it. */
  limit?: number;
  /** Whole requests left now. */
  remaining?: number;
  /** When the server says its window resets / bucket is full, in the server's epoch ms. */
  resetAtServerMs?: number;
  /** Seconds or HTTP-date of `Retry-After`, as a delay in ms from the response. */
  retryAfterMs?: number;
  /** The server's `Date` header in epoch ms (1 s resolution). */
  serverDateMs?: number;
}

export function readRateLimitHeaders(headers: HeaderBag): RateLimitObservation {
  const out: RateLimitObservation = {};
  const limit = nonNegativeInt(header(headers, 'X-RateLimit-Limit'));
  if (limit !== undefined && limit > 0) out.limit = limit;
  const remaining = nonNegativeInt(header(headers, 'X-RateLimit-Remaining'));
  if (remaining !== undefined) out.remaining = remaining;
  const reset = nonNegativeInt(header(headers, 'X-RateLimit-Reset'));
  if (reset !== undefined) out.resetAtServerMs = reset * 1000;
  const date = header(headers, 'Date');
  const dateMs = date === undefined ? NaN : Date.parse(date);
  if (!Number.isNaN(dateMs)) out.serverDateMs = dateMs;
  const retryAfter = header(headers, 'Retry-After');
  if (retryAfter !== undefined) {
    const seconds = nonNegativeInt(retryAfter);
    if (seconds !== undefined) out.retryAfterMs = seconds * 1000;
    else if (HTTP_DATE.test(retryAfter.trim())) {
      const at = Date.parse(retryAfter);
      if (!Number.isNaN(at)) out.retryAfterMs = Math.max(0, at - (out.serverDateMs ?? at));
    }
  }
  return out;
}
