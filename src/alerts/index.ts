export { describeChanges } from './format.ts';
