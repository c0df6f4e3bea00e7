import type { StrategyState } from './define.ts';

/** A handler's state writes as committed: each changed key to its JSON text (undefined: deleted). */
export type StateWrites = ReadonlyMap<string, string | undefined>;

export const NO_WRITES: StateWrites = new Map();

/**
 * A strategy's committed `ctx.state`, key by key: the JSON text as stored, and the value
 * parsed from it the first time the key is read. A read hands out a copy of that value, so a
 * handler may change what it read without changing what is committed (the next event, or a
 * restart that parses the stored text, sees the same); a primitive is handed out as is. It
 * changes only through `apply`, with the writes of a committed event.
 */
export class CommittedState {
  private readonly texts: Map<string, string>;
  private readonly parsed = new Map<string, unknown>();
  private sorted: string[] | undefined;

  constructor(entries: Iterable<readonly [string, string]>) {
    this.texts = new Map(entries);
  }

  text(key: string): string | undefined {
    return this.texts.get(key);
  }

  has(key: string): boolean {
    return this.texts.has(key);
  }

  read(key: string): unknown {
    // JSON has no undefined: a key parsed is a key whose value is not undefined.
    let value = this.parsed.get(key);
    if (value === undefined) {
      const json = this.texts.get(key);
      if (json === undefined) return undefined;
      value = JSON.parse(json);
      this.parsed.set(key, value);
    }
    return copyJson(value);
  }

  /** In key order; the same array until a key is added or deleted (do not change it). */
  keys(): readonly string[] {
    this.sorted ??= [...this.texts.keys()].sort();
    return this.sorted;
  }

  /** The writes of a committed event. */
  apply(writes: StateWrites): void {
    for (const [key, json] of writes) {
      this.parsed.delete(key);
      if (json === undefined) {
        if (this.texts.delete(key)) this.sorted = undefined;
      } else {
        if (!this.texts.has(key)) this.sorted = undefined;
        this.texts.set(key, json);
      }
    }
  }
}

const DELETED = Symbol('deleted');

/**
 * `ctx.state` within one handler call, over the committed state: a read of a committed key
 * parses it once per strategy (not once per read), a write keeps the value itself (read back
 * as is: your own write), and each written key is serialized once, when the handler returns.
 * A write that leaves a key as committed is no write. Nothing reaches the committed state
 * unless the runner commits the event.
 */
export class BufferedState implements StrategyState {
  private writes: Map<string, unknown> | undefined;

  constructor(
    private readonly committed: CommittedState,
    /** Its `guard()` throws once the attempt has ended (the attempt itself: no closure per handler call). */
    private readonly attempt: { guard(): void },
  ) {}

  /** Whether the handler set or deleted any key (even to what is committed). */
  get written(): boolean {
    return this.writes !== undefined;
  }

  get<T>(key: string): T | undefined {
    if (this.writes?.has(key)) {
      const v = this.writes.get(key);
      return v === DELETED ? undefined : (v as T);
    }
    return this.committed.read(key) as T | undefined;
  }

  set(key: string, value: unknown): void {
    this.attempt.guard();
    refuseNonJson(key, value, this.set);
    (this.writes ??= new Map()).set(key, value === undefined ? DELETED : value);
  }

  delete(key: string): void {
    this.attempt.guard();
    (this.writes ??= new Map()).set(key, DELETED);
  }

  /** In key order, the same in every run and after a restart. */
  keys(): string[] {
    const committed = this.committed.keys();
    if (!this.writes) return [...committed];
    const out = committed.filter((k) => this.writes!.get(k) !== DELETED);
    for (const [k, v] of this.writes) if (v !== DELETED && !this.committed.has(k)) out.push(k);
    return out.sort();
  }

  serialized(): StateWrites {
    if (!this.writes) return NO_WRITES;
    const out = new Map<string, string | undefined>();
    for (const [key, value] of this.writes) {
      const json = value === DELETED ? undefined : jsonOf(key, value);
      if (json !== this.committed.text(key)) out.set(key, json);
    }
    return out;
  }
}

/**
 * A value JSON cannot hold, refused where `set` is called, so the error names the line
 * (trial 36: a bigint failed the event after the handler returned, its stack in indexbot's
 * code; a Map was stored as {}; trial 37: a NaN ratio came back as null, which arithmetic reads as 0). Only the value itself is looked at: a deep walk would cost
 * every `set` the size of the value, which {@link jsonOf} finds at the commit instead.
 */
function refuseNonJson(key: string, value: unknown, caller: (...args: never[]) => unknown): void {
  const kind = typeof value;
  const what =
    kind === 'bigint' || kind === 'function' || kind === 'symbol'
      ? `a ${kind}`
      : kind === 'number' && !Number.isFinite(value)
        ? `${String(value)} (JSON stores it as null)`
        : value instanceof Map || value instanceof Set
          ? `a ${value.constructor.name} (JSON stores it as {})`
          : value instanceof Date
            ? 'a Date (JSON stores it as a string; store its getTime())'
            : undefined;
  if (what === undefined) return;
  const error = new TypeError(`ctx.state.set(${JSON.stringify(key)}, ...): ${what} is not a JSON value; store a string, a number, an array or a plain object`);
  // The stack starts at the handler's line that called set.
  Error.captureStackTrace(error, caller);
  throw error;
}

/** A written value as the JSON text stored, naming the key when a value inside it is not JSON. */
function jsonOf(key: string, value: unknown): string | undefined {
  try {
    return JSON.stringify(value) as string | undefined;
  } catch (e) {
    throw new TypeError(`ctx.state.set(${JSON.stringify(key)}, ...): the value is not JSON: ${(e as Error).message}`);
  }
}

/** A deep copy of a value parsed from JSON (plain objects, arrays and primitives only). */
function copyJson(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) return v.map(copyJson);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    const value = copyJson((v as Record<string, unknown>)[k]);
    // JSON.parse makes `__proto__` an own key; an assignment would set the prototype instead.
    if (k === '__proto__') Object.defineProperty(out, k, { value, enumerable: true, writable: true, configurable: true });
    else out[k] = value;
  }
  return out;
}
