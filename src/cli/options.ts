import { InvalidArgumentError } from 'commander';

/** Commander argument parsers that reject bad values with a message naming what was given. */
export function intOption(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (raw: string): number => {
    if (!/^-?\d+$/.test(raw)) throw new InvalidArgumentError(`expected a whole number, got "${raw}"`);
    const n = Number(raw);
    if (n < min || n > max) throw new InvalidArgumentError(`expected a number from ${min} to ${max}, got ${n}`);
    return n;
  };
}

export function numberOption(min: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n) || n < min) throw new InvalidArgumentError(`expected a number >= ${min}, got "${raw}"`);
    return n;
  };
}

/** Resolves when the process is asked to stop (Ctrl-C or a service manager). */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
