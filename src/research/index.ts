export { checkLookahead, compare, evenly, decisionsOf, type LookaheadOptions, type LookaheadResult, type Decision, type Difference, type ClockCall } from './lookahead.ts';
