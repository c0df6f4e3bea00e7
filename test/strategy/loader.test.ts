import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, StrategyError } from '../../src/core/index.ts';
import { defineStrategy, loadStrategies, loadStrategy, strategyWithParams, withParams } from '../../src/strategy/index.ts';
import { caught } from '../helpers/caught.ts';
import { captureLogger } from '../helpers/fake-transport.ts';

const dir = (name: string) => `test/fixtures/strategies/${name}`;

describe('loadStrategies', () => {
  it('loads the example strategies as TypeScript, with defaults for their params', async () => {
    const { logger } = captureLogger();
    const loaded = await loadStrategies('strategies', { logger });
    expect(loaded.map((l) => l.strategy.name)).toEqual(['drift-reversion', 'rebalance-alert', 'rebalance-front-run']);
    expect(loaded.find((l) => l.strategy.name === 'rebalance-front-run')!.params).toMatchObject({ notionalUsd: 500, holdHours: 24 });
  });

  it('names the file of a syntax error', async () => {
    const err = await loadStrategies(dir('syntax-error'), { logger: captureLogger().logger }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StrategyError);
    expect((err as StrategyError).code).toBe('STRATEGY_LOAD');
    expect((err as StrategyError).message).toMatch(/syntax-error\/broken\.ts:5: failed to load: Unexpected ","$/);
  });

  it('names a file that exports no strategy', async () => {
    const err = await loadStrategies(dir('no-default'), { logger: captureLogger().logger }).catch((e: unknown) => e);
    expect((err as StrategyError).message).toMatch(/helper\.ts: exports no strategy; it needs `export default defineStrategy/);
  });

  it('names the strategy and the param that failed validation', async () => {
    const err = await loadStrategies(dir('bad-params'), { logger: captureLogger().logger, params: { 'strict-params': { notionalUsd: -5 } } }).catch((e: unknown) => e);
    expect((err as StrategyError).code).toBe('STRATEGY_PARAMS');
    // One line in the config's form, `key: message`, without zod's ✖ and → marks.
    expect((err as StrategyError).message).toMatch(/strict-params\.ts: params of "strict-params" are invalid: notionalUsd: Too small: expected number to be >0$/);
  });

  it('with onError skip, starts without the broken strategy and says so', async () => {
    const { logger, lines } = captureLogger();
    const loaded = await loadStrategies(dir('bad-params'), { logger, onError: 'skip' });
    expect(loaded).toEqual([]);
    expect(lines.join('\n')).toMatch(/skipping \S*strict-params\.ts, which failed to load: /);
    expect(lines.join('\n')).toContain('strict-params.ts');
  });

  it('refuses params or disabled naming a strategy the directory does not hold, naming it and those found', async () => {
    const typo = await loadStrategies('strategies', { logger: captureLogger().logger, params: { 'rebalance-front-runn': { holdHours: 2 } } }).catch((e: unknown) => e);
    expect(typo).toBeInstanceOf(ConfigError);
    expect((typo as ConfigError).message).toBe('strategies.params "rebalance-front-runn": no such strategy in strategies (found drift-reversion, rebalance-alert, rebalance-front-run)');
    const disabled = await loadStrategies('strategies', { logger: captureLogger().logger, disabled: ['rebalance-alrt'] }).catch((e: unknown) => e);
    expect((disabled as ConfigError).message).toMatch(/^strategies\.disabled "rebalance-alrt": no such strategy in strategies/);
    // A disabled strategy is still one the directory holds: its params are no error.
    const loaded = await loadStrategies('strategies', { logger: captureLogger().logger, disabled: ['rebalance-alert'], params: { 'rebalance-alert': {} } });
    expect(loaded.map((l) => l.strategy.name)).toEqual(['drift-reversion', 'rebalance-front-run']);
  });

  it("only warns of an unknown name when told to (a config shared with another directory) or when a file failed to load, and ignores it for the demo's own params", async () => {
    const shared = captureLogger();
    expect(await loadStrategies('strategies', { logger: shared.logger, onUnknownName: 'warn', params: { elsewhere: {} } })).toHaveLength(3);
    expect(shared.lines.join('\n')).toContain('strategies.params \\"elsewhere\\": no such strategy in strategies');
    // The demo's own params for the example strategy, over a user's directory without it: not a word.
    const demo = captureLogger();
    expect(await loadStrategies('strategies', { logger: demo.logger, onUnknownName: 'ignore', params: { elsewhere: {} } })).toHaveLength(3);
    expect(demo.lines).toEqual([]);
    const broken = captureLogger();
    expect(await loadStrategies(dir('bad-params'), { logger: broken.logger, onError: 'skip', params: { 'strict-params': { notionalUsd: -5 }, other: {} } })).toEqual([]);
    expect(broken.lines.join('\n')).toContain('strategies.params \\"other\\": no such strategy');
  });

  it('refuses a strategies directory that was named but does not exist', async () => {
    await expect(loadStrategies('no/such/dir', { logger: captureLogger().logger, explicit: true })).rejects.toBeInstanceOf(ConfigError);
    expect(await loadStrategies('no/such/dir', { logger: captureLogger().logger })).toEqual([]);
  });
});

describe('withParams refuses keys the params schema does not know', () => {
  const strategy = defineStrategy({ name: 'holder', params: z.object({ holdHours: z.number().default(24) }), on: {} }) as never;
  it('a misspelt key of a non-strict object is an error naming it, not the default silently used', () => {
    const e = caught<StrategyError>(() => withParams(strategy, 'holder.ts', { holdHour: 6 }));
    expect(e).toBeInstanceOf(StrategyError);
    expect(e.code).toBe('STRATEGY_PARAMS');
    expect(e.message).toBe('holder.ts: params of "holder" are invalid: unknown key "holdHour" (known: holdHours)');
    expect(withParams(strategy, 'holder.ts', { holdHours: 6 }).params).toEqual({ holdHours: 6 });
  });
});

describe('strategyWithParams', () => {
  // Trial 37: a search from code called loadStrategy per set, and each call imported the file anew (25-30 KB a call, kept by Node).
  it('gives a loaded strategy other params, checked by its schema, without importing the file again', async () => {
    const file = new URL('../fixtures/backtest/announce-buyer.ts', import.meta.url).pathname;
    const loaded = await loadStrategy(file, { notionalUsd: 50 });
    const other = strategyWithParams(loaded, { notionalUsd: 75 });
    expect(other.strategy).toBe(loaded.strategy);
    expect(other.file).toBe(loaded.file);
    expect(other.params).toEqual({ notionalUsd: 75 });
    expect(loaded.params).toEqual({ notionalUsd: 50 });
    expect((await loadStrategy(file)).strategy).not.toBe(loaded.strategy);
    const refused = caught<StrategyError>(() => strategyWithParams(loaded, { notionalUsd: 'many' }));
    expect(refused.code).toBe('STRATEGY_PARAMS');
    expect(refused.message).toContain(file);
  });
});
