/**
 * A list of a run's result or report that grows with the run (its fills, each index's daily
 * values) is made as objects only when someone reads it. Until then the columns it is made
 * from ride beside it, out of sight of spreads and JSON, so that the report, the page and
 * report.json read the columns and a run nobody inspects never holds tens of thousands of
 * small objects.
 */

/** The columns behind lists not read yet, by the object holding the list: a list read (or set) is the one that counts from then on. */
const unread = new WeakMap<object, { key: string; get: () => unknown; carried: object }>();

/**
 * Gives `target` a property `key` made from `make` when first read, then kept as a plain
 * value, and remembers `carried` for it until then ({@link carriedBy}). A frozen or sealed
 * target keeps the getter, which gives the same value at every read.
 */
export function withLazyList<T extends object, K extends string & keyof T>(target: T, key: K, carried: object, make: () => T[K]): T {
  let value: T[K];
  let made = false;
  const settle = (v: T[K]) => {
    value = v;
    made = true;
    unread.delete(target);
    if (Object.getOwnPropertyDescriptor(target, key)?.configurable) Object.defineProperty(target, key, { value, configurable: true, enumerable: true, writable: true });
  };
  const get = () => {
    if (!made) settle(make());
    return value;
  };
  Object.defineProperty(target, key, { configurable: true, enumerable: true, get, set: settle });
  unread.set(target, { key, get, carried });
  return target;
}

/** The columns behind `holder[key]` ({@link withLazyList}), of class `type`, while that list was never read nor set. */
export function carriedBy<C>(holder: object, key: string, type: abstract new (...args: never[]) => C): C | undefined {
  const entry = unread.get(holder);
  return entry !== undefined && entry.key === key && Object.getOwnPropertyDescriptor(holder, key)?.get === entry.get && entry.carried instanceof type ? (entry.carried as C) : undefined;
}
