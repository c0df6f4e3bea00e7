export { describeChanges, describeEvent } from './format.ts';
