export { checkLookahead, compare, evenly, decisionsOf, type LookaheadOptions, type LookaheadResult, type Decision, type Difference, type ClockCall } from './lookahead.ts';
export { walkForward, walkForwardWindows, stitch, type WalkForwardWindow, type WalkForwardResult, type WindowSpec } from './walk-forward.ts';
export { serialRunner, bestIndex, score, RANK_METRICS, type RankMetric, type Trial, type TrialResult, type TrialRunner } from './trials.ts';
