import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
let assets: { js: string; css: string } | undefined;

/** uPlot's own build, read once from node_modules and inlined: a page needs no network. */
export function uplotAssets(): { js: string; css: string } {
  assets ??= {
    js: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
    css: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
  };
  return assets;
}

/**
 * uPlot options (source text, for a page's script) that label a time axis in UTC and 24-hour
 * time, dates as the pages' tables print them: uPlot's default is the browser's zone with
 * 12-hour times and M/D/YY dates, beside tables in UTC (trial 30: "11:40pm 11/24/26" on an axis
 * under events at "2026-11-25 00:26:30"). Its tick templates are rewritten token by token.
 */
export const UTC_TIME_OPTIONS = `tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'); },
  fmtDate: function (tpl) {
    return uPlot.fmtDate(tpl.replace(/\\{M\\}\\/\\{D\\}\\/\\{YY\\}/g, '{YYYY}-{MM}-{DD}').replace(/\\{M\\}\\/\\{D\\}/g, '{MM}-{DD}').replace(/\\{h\\}\\{aa\\}/g, '{HH}:00').replace(/\\{h\\}/g, '{HH}').replace(/\\{aa\\}/g, ''));
  }`;
