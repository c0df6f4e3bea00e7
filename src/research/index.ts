export { checkLookahead, compare, evenly, decisionsOf, type LookaheadOptions, type LookaheadResult, type Decision, type Difference, type ClockCall } from './lookahead.ts';
export { walkForward, walkForwardWindows, stitch, shortWindowMarks, type WalkForwardWindow, type WalkForwardResult, type WindowSpec } from './walk-forward.ts';
export { sweepRunner, bestIndex, score, RANK_METRICS, type RankMetric, type Trial, type TrialResult, type TrialRunner } from './trials.ts';
export { optimize, readTrials, ranked, SAMPLERS, type Sampler, type StoredTrial, type StudyOptions } from './optimize.ts';
export { readSpace, decode, encode, seededRandom, trialRandom, type Dimension } from './space.ts';
export { tpePropose, parzen, type Observation } from './tpe.ts';
export { renderOptimizePage, shortValue } from './optimize-page.ts';
export { renderWalkForwardPage } from './walk-forward-page.ts';
