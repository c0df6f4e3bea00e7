/** A numeric option's range; `integer` unless said otherwise, `maxText` for a bound better read as a power (2^40). */
export interface OptionRange {
  min: number;
  max: number;
  integer?: boolean;
  maxText?: string;
  /** `min` itself is out: (min, max]. */
  aboveMin?: boolean;
}

/**
 * Checks an option as p-queue does, in the constructor, naming it and the value received:
 * `Expected \`timeoutMs\` to be an integer from 1 to 2147483647, got \`-1\``. An option left
 * out (undefined) is its default's business. A `TypeError` unless `make` says otherwise (the
 * client's options are config, so a `ConfigError` there).
 */
export function checkOptionRange(name: string, value: unknown, range: OptionRange, make: (message: string) => Error = (m) => new TypeError(m)): void {
  if (value === undefined) return;
  const integer = range.integer ?? true;
  const fits = typeof value === 'number' && (integer ? Number.isSafeInteger(value) : Number.isFinite(value)) && (range.aboveMin ? value > range.min : value >= range.min) && value <= range.max;
  if (!fits) {
    const max = range.maxText ?? range.max;
    const bounds = range.aboveMin ? `above ${range.min} and up to ${max}` : `from ${range.min} to ${max}`;
    throw make(`Expected \`${name}\` to be ${integer ? 'an integer' : 'a number'} ${bounds}, got \`${String(value)}\``);
  }
}
