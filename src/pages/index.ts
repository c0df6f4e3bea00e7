export { UTC_TIME_OPTIONS, uplotAssets } from './uplot.ts';
