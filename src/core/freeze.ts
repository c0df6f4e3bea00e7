/**
 * Freezes `v` and everything it holds. An object already frozen is taken as frozen through:
 * events are frozen where they are made, and handing one on again costs no walk.
 */
export function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}
