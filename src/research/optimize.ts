import { appendFileSync, closeSync, existsSync, fsyncSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StrategyMetrics } from '../backtest/index.ts';
import { ConfigError, makeDirectories, shortJson } from '../core/index.ts';
import { type Dimension, decode, encode, trialRandom } from './space.ts';
import { tpePropose } from './tpe.ts';
import { type RankMetric, type TrialRunner, score } from './trials.ts';

/**
 * A parameter search over a space, one trial at a time, each appended to `trials.jsonl` in
 * the study's directory as soon as it finishes (and synced): a search killed at any moment
 * resumes from the trials it has, and proposes the same next trials it would have. Trial n
 * draws from its own generator (seed, n), and TPE reads only the finished trials, so the
 * same seed gives the same trials, interrupted or not.
 */

export const SAMPLERS = ['random', 'tpe'] as const;
export type Sampler = (typeof SAMPLERS)[number];

export interface StoredTrial {
  n: number;
  params: Record<string, unknown>;
  /** The figure ranked by; null when the run had none (too short, no trades) or its handlers failed on events. */
  score: number | null;
  runId: string;
  /** Events whose handler failed and were skipped (absent in a study begun before it was recorded: none). */
  failedEvents?: number;
  metrics: Pick<StrategyMetrics, 'totalReturn' | 'cagr' | 'sharpe' | 'sortino' | 'calmar' | 'maxDrawdown' | 'trades' | 'winRate' | 'profitFactor'>;
}

export interface StudyOptions {
  dir: string;
  /** What makes two searches the same study: a different value refuses to resume here. */
  identity: unknown;
  space: Dimension[];
  /** Params every trial shares, under the sampled ones. */
  base: Record<string, unknown>;
  trials: number;
  metric: RankMetric;
  sampler: Sampler;
  seed: number;
  /** Random trials before TPE takes over. @default 10 */
  startup?: number;
  /**
   * Trials proposed together from the same finished trials, and run at once (on the
   * runner's workers). Trial n sees the trials before its batch only, so the trials depend
   * on the batch size, never on how many workers run them. @default 1
   */
  batch?: number;
  run: TrialRunner;
  from: number;
  to: number;
  onTrial?: (t: StoredTrial, done: number) => void;
}

export function readTrials(dir: string): StoredTrial[] {
  const file = join(dir, 'trials.jsonl');
  if (!existsSync(file)) return [];
  const out: StoredTrial[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line) as StoredTrial);
    } catch {
      // A line cut short by a kill: that trial runs again.
      break;
    }
  }
  return out;
}

/** Where two studies' identities differ, by key path (`range.from`, `base.notionalUsd`; `sourceHash`: the strategy's file changed), with both values. */
function studyChanges(before: unknown, now: unknown, at = ''): string[] {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObject(before) && isObject(now)) {
    return [...new Set([...Object.keys(before), ...Object.keys(now)])].flatMap((k) => studyChanges(before[k], now[k], at === '' ? k : `${at}.${k}`));
  }
  return JSON.stringify(before) === JSON.stringify(now) ? [] : [`${at || 'study.json'} was ${shortJson(before)}, now ${shortJson(now)}`];
}

function parsedOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export async function optimize(o: StudyOptions): Promise<StoredTrial[]> {
  makeDirectories(o.dir);
  const studyFile = join(o.dir, 'study.json');
  const identity = `${JSON.stringify(o.identity, null, 1)}\n`;
  if (existsSync(studyFile)) {
    const kept = readFileSync(studyFile, 'utf8');
    if (kept !== identity) {
      const changes = studyChanges(parsedOrText(kept), JSON.parse(identity));
      const listed = changes.length > 3 ? [...changes.slice(0, 3), `and ${changes.length - 3} more`] : changes;
      throw new ConfigError(`${o.dir} holds another search (${listed.join('; ') || 'its study.json differs'}); give another --out, or this one's settings to resume it`);
    }
  }
  writeFileSync(studyFile, identity);
  const done = readTrials(o.dir);
  // Rewrite what was read: drops a partial last line before appending.
  writeFileSync(join(o.dir, 'trials.jsonl'), done.map((t) => `${JSON.stringify(t)}\n`).join(''));
  const startup = o.startup ?? 10;
  const levels = o.space.map((d) => (d.kind === 'choice' ? d.values.length : 0));
  const batch = o.batch ?? 1;
  if (!Number.isInteger(batch) || batch < 1) throw new RangeError(`Expected \`batch\` to be a whole number >= 1, got ${batch}`);
  while (done.length < o.trials) {
    const first = done.length;
    const seen = done.slice(0, first - (first % batch));
    const proposals: Record<string, unknown>[] = [];
    for (let n = first; n < Math.min(o.trials, first - (first % batch) + batch); n++) {
      const random = trialRandom(o.seed, n);
      const u =
        o.sampler === 'tpe' && n >= startup && seen.length > 0
          ? tpePropose(
              seen.map((t) => ({ u: o.space.map((d) => encode(d, t.params[d.key])), score: t.score ?? Number.NEGATIVE_INFINITY })),
              levels,
              random,
            )
          : o.space.map(() => random());
      proposals.push(Object.fromEntries(o.space.map((d, i) => [d.key, decode(d, u[i]!)])));
    }
    const results = await o.run(proposals.map((p) => ({ params: { ...o.base, ...p }, from: o.from, to: o.to })));
    for (const [k, r] of results.entries()) {
      const m = r.metrics;
      const s = score(r, o.metric);
      const trial: StoredTrial = {
        n: first + k,
        params: proposals[k]!,
        score: Number.isFinite(s) ? s : null,
        runId: r.runId,
        failedEvents: r.failedEvents,
        metrics: {
          totalReturn: m.totalReturn,
          cagr: m.cagr,
          sharpe: m.sharpe,
          sortino: m.sortino,
          calmar: m.calmar,
          maxDrawdown: m.maxDrawdown,
          trades: m.trades,
          winRate: m.winRate,
          profitFactor: m.profitFactor,
        },
      };
      appendSynced(join(o.dir, 'trials.jsonl'), `${JSON.stringify(trial)}\n`);
      done.push(trial);
      o.onTrial?.(trial, done.length);
    }
  }
  return done;
}

function appendSynced(file: string, line: string): void {
  appendFileSync(file, line);
  const fd = openSync(file, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Best first; a trial without a figure last; ties by trial number. */
export function ranked(trials: readonly StoredTrial[]): StoredTrial[] {
  return [...trials].sort((a, b) => (b.score ?? Number.NEGATIVE_INFINITY) - (a.score ?? Number.NEGATIVE_INFINITY) || a.n - b.n);
}
