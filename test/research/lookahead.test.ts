import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/core/index.ts';
import { checkLookahead, compare, evenly } from '../../src/research/index.ts';
import { H, T0, buildCache } from '../helpers/backtest-cache.ts';

const fixture = (name: string) => new URL(`../fixtures/research/${name}.ts`, import.meta.url).pathname;
const example = (name: string) => new URL(`../../strategies/${name}.ts`, import.meta.url).pathname;
const range = { indexes: ['x', 'y'], from: T0, to: T0 + 119 * H, feeBps: 0, slippageBps: 0 };

describe('check-lookahead', () => {
  it('catches a strategy that reads the cache file itself: it decides differently on the cache cut at its decision', async () => {
    const r = await checkLookahead({ ...range, cachePath: buildCache(), strategyFile: fixture('file-peeker'), params: {} });
    expect(r.decisions).toBe(1);
    expect(r.checked).toBe(1);
    // 200 USD with the future in the file, 100 without, at x's value at hour 30: 10 x 0.5 + 5.02 x 0.5.
    const nav = 10 * 0.5 + 5.02 * 0.5;
    expect(r.differences.map((d) => [d.seenIn, (d.decision.at - T0) / H, d.decision.eventId, d.decision.quantity, (d.cutAt - T0) / H])).toEqual([
      ['cut only', 30, 'rebalance.announced:x:rb_x_1', expect.closeTo(100 / nav, 7), 30],
      ['full only', 30, 'rebalance.announced:x:rb_x_1', expect.closeTo(200 / nav, 7), 30],
    ]);
  });

  it('catches one that opens the cache file when its module is evaluated: each run loads it with INDEXBOT_DB set', async () => {
    const previous = process.env.INDEXBOT_DB;
    delete process.env.INDEXBOT_DB;
    try {
      const r = await checkLookahead({ ...range, cachePath: buildCache(), strategyFile: fixture('top-level-peeker'), params: {} });
      expect(r.differences.map((d) => [d.seenIn, (d.decision.at - T0) / H])).toEqual([
        ['cut only', 30],
        ['full only', 30],
      ]);
    } finally {
      if (previous !== undefined) process.env.INDEXBOT_DB = previous;
    }
  });

  it('catches one that opens the cache by its relative path, data/indexbot.db, without INDEXBOT_DB: the cut replays run where that path is the cut copy (found by a trial)', async () => {
    const previous = { cwd: process.cwd(), db: process.env.INDEXBOT_DB };
    delete process.env.INDEXBOT_DB;
    const project = mkdtempSync(join(tmpdir(), 'indexbot-lookahead-project-'));
    mkdirSync(join(project, 'data'));
    copyFileSync(buildCache(), join(project, 'data', 'indexbot.db'));
    writeFileSync(join(project, 'data', 'notes.txt'), 'kept');
    process.chdir(project);
    try {
      const r = await checkLookahead({ ...range, cachePath: 'data/indexbot.db', strategyFile: fixture('cwd-peeker'), params: {} });
      expect(r.differences.map((d) => [d.seenIn, (d.decision.at - T0) / H])).toEqual([
        ['cut only', 30],
        ['full only', 30],
      ]);
      // The project is as it was: the cut copy was made elsewhere, and the working directory restored.
      expect(process.cwd()).toBe(realpathSync(project));
      // (Less SQLite's -wal and -shm, which a connection to a WAL database makes beside it.)
      expect(
        readdirSync(join(project, 'data'))
          .filter((f) => !/-(wal|shm)$/.test(f))
          .sort(),
      ).toEqual(['indexbot.db', 'notes.txt']);
    } finally {
      process.chdir(previous.cwd);
      if (previous.db !== undefined) process.env.INDEXBOT_DB = previous.db;
      rmSync(project, { recursive: true, force: true });
    }
  });

  it('catches a strategy that carries what it saw from one run to the next in a global', async () => {
    const r = await checkLookahead({ ...range, cachePath: buildCache(), strategyFile: fixture('global-peeker'), params: {} });
    expect(r.differences.map((d) => d.seenIn)).toEqual(['cut only', 'full only']);
    expect(r.globals).toContain('__indexbotSeenNavs');
    delete (globalThis as { __indexbotSeenNavs?: unknown }).__indexbotSeenNavs;
  });

  it("catches one that carries state from one run to the next in a module variable: a second run on the same module, as a sweep's, decides otherwise", async () => {
    const r = await checkLookahead({ ...range, cachePath: buildCache(), strategyFile: fixture('module-carrier'), params: {} });
    // Each cut replay imports the module afresh: the cuts see nothing (before, that was all the check ran).
    expect(r.differences).toEqual([]);
    expect(r.globals).toEqual([]);
    expect(r.carriedOver.map((d) => [d.seenIn, d.decision.eventId])).toEqual([
      ['full only', 'rebalance.announced:x:rb_x_1'],
      ['cut only', 'rebalance.announced:x:rb_x_1'],
    ]);
    expect(r.carriedOver[1]!.decision.quantity).toBeCloseTo(2 * r.carriedOver[0]!.decision.quantity!, 6);
  });

  it('counts the events its handlers failed on, with the first error', async () => {
    const failing = new URL('../fixtures/backtest/fail-better.ts', import.meta.url).pathname;
    const r = await checkLookahead({ ...range, indexes: ['x'], cachePath: buildCache(), strategyFile: failing, params: { fail: true } });
    expect(r.failedEvents).toBeGreaterThan(0);
    expect(r.firstFailure).toMatch(/^performance\.updated:x:.*broken on purpose/);
    const clean = await checkLookahead({ ...range, cachePath: buildCache(), strategyFile: example('rebalance-front-run'), params: {} });
    expect([clean.failedEvents, clean.firstFailure, clean.carriedOver]).toEqual([0, null, []]);
  });

  it('warns about the wall clock read inside a handler, with the line, and finds no difference when decisions do not use it', async () => {
    const r = await checkLookahead({ ...range, cachePath: buildCache(), strategyFile: fixture('clock-reader'), params: {} });
    expect(r.differences).toEqual([]);
    // Once in the full replay, once in its second run on the same module, once in the replay cut at the one decision.
    expect(r.clockCalls).toEqual([
      { call: 'Date.now()', location: expect.stringMatching(new RegExp(`^${fixture('clock-reader')}:10:\\d+$`)), count: 3 },
      { call: 'new Date()', location: expect.stringMatching(new RegExp(`^${fixture('clock-reader')}:11:\\d+$`)), count: 3 },
    ]);
    expect(Date.now).not.toHaveProperty('mock');
    expect(new Date(0).toISOString()).toBe('1970-01-01T00:00:00.000Z');
  });

  it('blames the strategy for a clock its helper reads, not for the one its logger reads', async () => {
    const logger = createLogger({ format: 'json', destination: new PassThrough().resume() });
    const r = await checkLookahead({ ...range, cachePath: buildCache(), strategyFile: fixture('logging-clock-reader'), params: {}, logger });
    expect(r.clockCalls).toEqual([{ call: 'Date.now()', location: expect.stringMatching(new RegExp(`^${fixture('logging-clock-reader')}:12:\\d+$`)), count: 3 }]);
  });

  it.each(['rebalance-front-run', 'drift-reversion', 'rebalance-alert'])('finds the example %s clean', async (name) => {
    const r = await checkLookahead({ ...range, cachePath: buildCache(), strategyFile: example(name), params: {} });
    expect(r.differences).toEqual([]);
    expect(r.clockCalls).toEqual([]);
    expect(r.globals).toEqual([]);
    if (name === 'rebalance-front-run') expect(r.checked).toBeGreaterThan(0);
  });

  it('compares decisions as multisets up to the cut, and picks check times evenly', () => {
    const d = (at: number, quantity: number) => ({ at, eventId: 'e', side: 'buy' as const, instrument: 'index:x', outcome: 'filled', quantity });
    expect(compare([d(1, 1), d(1, 1), d(5, 1)], [d(1, 1), d(1, 2)], 2)).toEqual([
      { decision: d(1, 1), seenIn: 'full only' },
      { decision: d(1, 2), seenIn: 'cut only' },
    ]);
    expect(evenly([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 4)).toEqual([1, 4, 7, 10]);
    expect(evenly([1, 2], 5)).toEqual([1, 2]);
  });
});
