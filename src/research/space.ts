import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError, jsonSyntaxText, mulberry32 } from '../core/index.ts';

/**
 * A search space over a strategy's params, read from a JSON file:
 *
 *   { "holdHours": [6, 72],                          a range; whole numbers when the schema says integer
 *     "minIncrease": { "min": 0.001, "max": 0.05, "log": true },
 *     "maxTokens": { "min": 1, "max": 5, "int": true },
 *     "mode": { "values": ["a", "b"] } }             a choice
 *
 * Every key must be a param of the strategy, and a range must lie inside the schema's bounds.
 * Samplers work in the unit interval; `decode` maps a unit value back to the param.
 */
export type Dimension = { key: string; kind: 'range'; min: number; max: number; int: boolean; log: boolean } | { key: string; kind: 'choice'; values: unknown[] };

const rangeSpec = z.strictObject({ min: z.number(), max: z.number(), log: z.boolean().optional(), int: z.boolean().optional() });
const choiceSpec = z.strictObject({ values: z.array(z.unknown()).min(1) });
const pairSpec = z.tuple([z.number(), z.number()]);

interface SchemaProperty {
  type?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
}

export function readSpace(file: string, strategy: { name: string; params?: z.ZodType | undefined }): Dimension[] {
  let text: string;
  let raw: unknown;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`${file}: not a readable JSON search space: ${(e as Error).message}`);
  }
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`${file}: not a readable JSON search space: ${jsonSyntaxText(e, text)}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || Object.keys(raw).length === 0) {
    throw new ConfigError(`${file}: expected an object of param name to a range [min, max], {min, max, log?, int?} or {values: [...]}`);
  }
  // A strategy without a params schema has no params to search.
  const properties = (z.toJSONSchema(strategy.params ?? z.object({}), { io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, SchemaProperty> }).properties ?? {};
  return Object.entries(raw).map(([key, spec]): Dimension => {
    const prop = properties[key];
    if (!prop) throw new ConfigError(`${file}: ${key}: not a param of ${strategy.name} (its params: ${Object.keys(properties).join(', ') || 'none'})`);
    const choice = choiceSpec.safeParse(spec);
    // The param's own schema, found as withParams finds the keys: a schema with a shape.
    const shape = (strategy.params as { shape?: Record<string, z.ZodType> } | undefined)?.shape;
    const field = typeof shape === 'object' && shape !== null ? shape[key] : undefined;
    const check = (value: unknown, what: string) => {
      const r = field?.safeParse(value);
      if (r && !r.success) {
        const why = r.error.issues.map((i) => `${i.path.length > 0 ? `${i.path.join('.')}: ` : ''}${i.message}`).join('; ');
        throw new ConfigError(`${file}: ${key}: ${what} is not a value ${strategy.name} accepts: ${why}`);
      }
    };
    if (choice.success) {
      const seen = new Set<string>();
      for (const value of choice.data.values) {
        const text = JSON.stringify(value);
        // A value listed twice would be sampled twice as often, and its trials read back as the first one's.
        if (seen.has(text)) throw new ConfigError(`${file}: ${key}: value ${text} is listed twice`);
        seen.add(text);
        check(value, `value ${text}`);
      }
      return { key, kind: 'choice', values: choice.data.values };
    }
    const pair = pairSpec.safeParse(spec);
    const range = pair.success ? { min: pair.data[0], max: pair.data[1] } : rangeSpec.safeParse(spec).data;
    if (!range) throw new ConfigError(`${file}: ${key}: expected [min, max], {min, max, log?, int?} or {values: [...]}, got ${JSON.stringify(spec)}`);
    const { min, max } = range;
    if ('int' in range && range.int === false && prop.type === 'integer') {
      throw new ConfigError(`${file}: ${key}: ${strategy.name} takes whole numbers here, so "int": false cannot hold; drop it`);
    }
    const int = ('int' in range && range.int) || prop.type === 'integer';
    const log = ('log' in range && range.log) ?? false;
    if (!(Number.isFinite(min) && Number.isFinite(max) && min < max)) throw new ConfigError(`${file}: ${key}: expected min < max, got ${min} .. ${max}`);
    if (log && min <= 0) throw new ConfigError(`${file}: ${key}: a log range needs min > 0, got ${min}`);
    // Sampled values are clamped to the bounds: a fractional bound would be sampled as it is.
    if (int && !(Number.isInteger(min) && Number.isInteger(max))) throw new ConfigError(`${file}: ${key}: a range of whole numbers needs whole-number bounds, got ${min} .. ${max}`);
    const below = (prop.minimum !== undefined && min < prop.minimum) || (prop.exclusiveMinimum !== undefined && min <= prop.exclusiveMinimum);
    const above = (prop.maximum !== undefined && max > prop.maximum) || (prop.exclusiveMaximum !== undefined && max >= prop.exclusiveMaximum);
    if (below || above) throw new ConfigError(`${file}: ${key}: ${min} .. ${max} is outside what ${strategy.name} accepts (${accepted(prop, min, max)})`);
    // What the bounds above do not say (a refinement, say): each end passes the param's own schema.
    for (const [end, value] of [
      ['min', min],
      ['max', max],
    ] as const) {
      check(value, `${end} ${value}`);
    }
    return { key, kind: 'range', min, max, int, log };
  });
}

/** The bounds a param's schema sets, as a person reads them; zod's integer limits (the safe integers) only where the range passed them. */
function accepted(prop: SchemaProperty, min: number, max: number): string {
  const lo =
    prop.exclusiveMinimum !== undefined
      ? `> ${prop.exclusiveMinimum}`
      : prop.minimum !== undefined && (prop.minimum > Number.MIN_SAFE_INTEGER || min < prop.minimum)
        ? `>= ${prop.minimum}`
        : undefined;
  const hi =
    prop.exclusiveMaximum !== undefined
      ? `< ${prop.exclusiveMaximum}`
      : prop.maximum !== undefined && (prop.maximum < Number.MAX_SAFE_INTEGER || max > prop.maximum)
        ? `<= ${prop.maximum}`
        : undefined;
  if (lo?.startsWith('>=') && hi?.startsWith('<=')) return `${prop.minimum} .. ${prop.maximum}`;
  return [lo, hi].filter(Boolean).join(' and ');
}

/** Each whole number owns an equal slice of the unit interval (of its log, for a log range). */
function intBounds(d: { min: number; max: number; log: boolean }): [number, number] {
  return d.log ? [Math.log(Math.max(d.min - 0.5, d.min / 2)), Math.log(d.max + 0.5)] : [d.min - 0.5, d.max + 0.5];
}

/** The param value at unit position `u` in [0, 1]. */
export function decode(d: Dimension, u: number): unknown {
  const x = Math.min(1, Math.max(0, u));
  if (d.kind === 'choice') return d.values[Math.min(d.values.length - 1, Math.floor(x * d.values.length))];
  if (d.int) {
    const [lo, hi] = intBounds(d);
    const v = lo + x * (hi - lo);
    return Math.min(d.max, Math.max(d.min, Math.round(d.log ? Math.exp(v) : v)));
  }
  return d.log ? Math.exp(Math.log(d.min) + x * (Math.log(d.max) - Math.log(d.min))) : d.min + x * (d.max - d.min);
}

/** Where a param value sits in [0, 1] (the inverse of `decode`, to the middle of its slice). */
export function encode(d: Dimension, value: unknown): number {
  if (d.kind === 'choice') {
    const i = d.values.findIndex((v) => JSON.stringify(v) === JSON.stringify(value));
    return (Math.max(0, i) + 0.5) / d.values.length;
  }
  const v = value as number;
  if (d.int) {
    const [lo, hi] = intBounds(d);
    return ((d.log ? Math.log(v) : v) - lo) / (hi - lo);
  }
  return d.log ? (Math.log(v) - Math.log(d.min)) / (Math.log(d.max) - Math.log(d.min)) : (v - d.min) / (d.max - d.min);
}

/** A seeded generator (mulberry32): the same seed gives the same stream on every machine. */
export const seededRandom = mulberry32;

/** The generator of trial `n` of a search with `seed`: a trial's draw does not depend on how many came before it in this process. */
export function trialRandom(seed: number, n: number): () => number {
  const r = seededRandom((Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(n + 1, 0xc2b2ae35)) >>> 0);
  r();
  return r;
}
