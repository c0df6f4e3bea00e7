/**
 * A signal that aborts when either of two does, with that one's reason, and `done` to call
 * once it is no longer needed. Not `AbortSignal.any`: on Node 20 each call leaves an entry on
 * both sources for as long as they live (nodejs/node#55351), and a daemon's signals live as
 * long as it does: one entry per request, for months.
 */
export function eitherSignal(a: AbortSignal | undefined, b: AbortSignal | undefined): { signal: AbortSignal | undefined; done: () => void } {
  if (!a || !b) return { signal: a ?? b, done: () => {} };
  const either = new AbortController();
  const fromA = () => either.abort(a.reason);
  const fromB = () => either.abort(b.reason);
  const done = () => {
    a.removeEventListener('abort', fromA);
    b.removeEventListener('abort', fromB);
  };
  if (a.aborted) fromA();
  else if (b.aborted) fromB();
  else {
    a.addEventListener('abort', fromA, { once: true });
    b.addEventListener('abort', fromB, { once: true });
  }
  return { signal: either.signal, done };
}
