import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/core/index.ts';
import { checkRange, dateOption, intOption, numberOption, onStopSignal, shellWord } from '../../src/cli/options.ts';

const refused = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a refusal');
};

describe('CLI value parsers', () => {
  it('intOption: whole numbers within [min, max], the value given in the message', () => {
    const port = intOption(0, 65_535);
    expect(port('0')).toBe(0);
    expect(port('65535')).toBe(65_535);
    for (const bad of ['65536', '-1', '1e3', '1.5', 'abc', '', '99999999999999999999']) {
      const e = refused(() => port(bad));
      expect(e).toBeInstanceOf(InvalidArgumentError);
      expect(e.message).toBe(`expected a whole number from 0 to 65535, got "${bad}"`);
    }
  });

  it('numberOption: finite decimals within the range; aboveMin excludes the minimum', () => {
    const speed = numberOption(0, 100_000);
    expect(speed('0')).toBe(0);
    expect(speed('1e5')).toBe(100_000);
    expect(refused(() => speed('1e15')).message).toBe('expected a number from 0 to 100000, got "1e15"');
    expect(refused(() => speed('Infinity')).message).toContain('got "Infinity"');
    const cash = numberOption(0, 1e12, { aboveMin: true });
    expect(cash('0.01')).toBe(0.01);
    expect(refused(() => cash('0')).message).toBe('expected a number above 0 and up to 1000000000000, got "0"');
  });

  it('dateOption: real calendar days only, as midnight UTC or a full ISO time', () => {
    expect(dateOption('2024-02-29')).toBe(Date.UTC(2024, 1, 29));
    expect(dateOption('2025-01-01T12:00:00+02:00')).toBe(Date.UTC(2025, 0, 1, 10));
    expect(refused(() => dateOption('2025-02-30')).message).toBe('no such date: "2025-02-30"');
    expect(refused(() => dateOption('2025-04-31T00:00:00Z')).message).toBe('no such date: "2025-04-31T00:00:00Z"');
    expect(refused(() => dateOption('2025-00-10')).message).toContain('"2025-00-10"');
    expect(refused(() => dateOption('March 3')).message).toContain('expected a date like 2025-01-01');
  });

  it('checkRange: from must be before to, named by flag and value', () => {
    expect(() => checkRange({ flag: '--from', at: 1 }, { flag: '--to', at: 2 })).not.toThrow();
    const e = refused(() => checkRange({ flag: '--from', at: Date.UTC(2025, 0, 2) }, { flag: '--to', at: Date.UTC(2025, 0, 2) }));
    expect(e).toBeInstanceOf(UsageError);
    expect(e.message).toBe('--from 2025-01-02T00:00:00Z is not before --to 2025-01-02T00:00:00Z');
  });
});

describe('onStopSignal takes over a signal bin/indexbot.js kept while the code loaded', () => {
  const host = process as unknown as Record<symbol, unknown>;
  const HANDLER = Symbol.for('indexbot.earlyStopHandler');
  const CAME = Symbol.for('indexbot.earlyStop');

  it('calls the handler with a signal that came before it, and leaves no listener of its own or of bin', async () => {
    const early = () => {};
    process.on('SIGTERM', early);
    host[HANDLER] = early;
    host[CAME] = 'SIGTERM';
    const listeners = process.listenerCount('SIGTERM');
    const got: string[] = [];
    onStopSignal((signal) => got.push(signal));
    await Promise.resolve();
    expect(got).toEqual(['SIGTERM']);
    // A second signal then ends the process, as it would without us: nothing of ours listens.
    expect(process.listenerCount('SIGTERM')).toBe(listeners - 1);
    expect(host[HANDLER]).toBeUndefined();
    expect(host[CAME]).toBeUndefined();
  });

  it('never leaves a moment with no SIGTERM listener while it takes over: Node would close the signal handle and drop a signal in flight (found by trial 26)', () => {
    const early = () => {};
    process.on('SIGTERM', early);
    host[HANDLER] = early;
    const counts: number[] = [];
    const watch = (event: string | symbol) => {
      if (event === 'SIGTERM') counts.push(process.listenerCount('SIGTERM'));
    };
    process.on('removeListener', watch);
    const base = process.listenerCount('SIGTERM') - 1;
    const stop = onStopSignal(() => {});
    process.off('removeListener', watch);
    expect(counts.length).toBeGreaterThan(0);
    expect(Math.min(...counts)).toBeGreaterThan(base);
    stop();
  });

  it('with none kept, listens until the first signal', () => {
    const early = () => {};
    process.on('SIGINT', early);
    host[HANDLER] = early;
    const before = process.listenerCount('SIGINT');
    const got: string[] = [];
    const stop = onStopSignal((signal) => got.push(signal));
    // bin's listener gone, ours in its place.
    expect(process.listenerCount('SIGINT')).toBe(before);
    expect(process.listeners('SIGINT')).not.toContain(early);
    stop();
    expect(got).toEqual([]);
  });
});

describe('a word of a command the user is told to run', () => {
  it('is quoted for the shell unless it is plain path characters (the review: a database path with a space broke the command)', () => {
    expect(shellWord('data/indexbot.db')).toBe('data/indexbot.db');
    expect(shellWord('/srv/my bots/bot.db')).toBe("'/srv/my bots/bot.db'");
    expect(shellWord("it's.db")).toBe("'it'\\''s.db'");
  });
});
