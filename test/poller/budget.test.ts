import { describe, expect, it } from 'vitest';
import { type PollJob, planBudget } from '../../src/poller/index.ts';

const job = (kind: PollJob['kind'], indexId: string, seconds: number): PollJob => ({ name: `${kind}:${indexId}`, kind, indexId, intervalMs: seconds * 1000 });
const jobs = (n: number, s: { rebalancing: number; composition: number; performance: number }) =>
  Array.from({ length: n }, (_, i) => [job('rebalancing', `i${i}`, s.rebalancing), job('composition', `i${i}`, s.composition), job('performance', `i${i}`, s.performance)]).flat();

describe('planBudget', () => {
  it('leaves a plan that fits alone', () => {
    const plan = planBudget(jobs(2, { rebalancing: 60, composition: 60, performance: 60 }), 60);
    expect(plan.requestedPerMin).toBe(6);
    expect(plan.stretched).toEqual([]);
    expect(plan.fits).toBe(true);
  });

  it('stretches performance first, and only as far as needed', () => {
    // 10 indexes: 10 + 10 + 30 = 50/min asked; public budget 60 * 0.8 = 48.
    const plan = planBudget(jobs(10, { rebalancing: 60, composition: 60, performance: 20 }), 60);
    expect(plan.requestedPerMin).toBeCloseTo(50, 9);
    expect(new Set(plan.stretched.map((s) => s.name.split(':')[0]))).toEqual(new Set(['performance']));
    expect(plan.plannedPerMin).toBeLessThanOrEqual(48);
    expect(plan.jobs.filter((j) => j.kind === 'rebalancing').every((j) => j.intervalMs === 60_000)).toBe(true);
  });

  it('stretches composition next and rebalancing last', () => {
    const plan = planBudget(jobs(10, { rebalancing: 5, composition: 5, performance: 5 }), 60);
    const kinds = [...new Set(plan.stretched.map((s) => s.name.split(':')[0]))];
    expect(kinds).toEqual(['performance', 'composition', 'rebalancing']);
    expect(plan.fits).toBe(true);
    const interval = (kind: string) => plan.jobs.find((j) => j.kind === kind)!.intervalMs;
    expect(interval('rebalancing')).toBeLessThan(interval('composition'));
    expect(interval('composition')).toBeLessThanOrEqual(interval('performance'));
  });

  it('says so when even the longest intervals do not fit', () => {
    const plan = planBudget(jobs(200, { rebalancing: 1, composition: 1, performance: 1 }), 60, 0.8, 10);
    expect(plan.fits).toBe(false);
  });
});
