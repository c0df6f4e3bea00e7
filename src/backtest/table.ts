import { relative } from 'node:path';
import { fewNames, minuteText, plainText } from '../core/index.ts';
import { type BacktestReport, HOLES_PREFIX, type ReportFillRow, NARROWED_PREFIX, gapText, gapsInRun, labelOf, reportFillRows, reportSales } from './report.ts';

type Num = number | null | undefined;
/** `x.toFixed(d)` without the sign of a value that rounds to zero: "-0.00" reads as a loss that is not there. */
function unsignedZero(x: number, d: number): string {
  const text = x.toFixed(d);
  return /^-0(\.0*)?$/.test(text) ? text.slice(1) : text;
}
export const pct = (x: Num) => (x === null || x === undefined ? '—' : `${unsignedZero(x * 100, 2)}%`);
export const fixed = (x: Num, d = 2) => (x === null || x === undefined ? '—' : unsignedZero(x, d));
/**
 * Made once: `toLocaleString` with options builds a new ICU formatter on every call (about
 * 75 µs, taken under a lock the process's threads share), and a report formats every fill.
 */
const AMOUNT = new Intl.NumberFormat('en-US', { maximumSignificantDigits: 6, useGrouping: false });
/** A quantity or a price: six significant digits, never an exponent (a token may trade at 0.00000001 USD, a position hold 11 million units). */
export const amount = (x: Num) => (x === null || x === undefined ? '—' : AMOUNT.format(x));
export const usd = (x: Num) => (x === null || x === undefined ? '—' : `${x < 0 ? '-' : ''}${Math.abs(x).toFixed(2)}`);
const days = (ms: Num) => (ms === null || ms === undefined ? '—' : `${(ms / 86_400_000).toFixed(1)} d`);
export const hours = (h: Num) => (h === null || h === undefined ? '—' : h >= 48 ? `${(h / 24).toFixed(1)} d` : `${h.toFixed(1)} h`);
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

type Metrics = BacktestReport['metrics'];
type Bench = BacktestReport['benchmarks'][number];
/** A figure of the strategy and of each benchmark; `annualised` rows get the short-window mark. */
export interface MetricRow {
  label: string;
  strategy: string;
  benchmark: (b: Bench) => string;
  annualised?: boolean;
}

export function metricRows(m: Metrics): MetricRow[] {
  const none = () => '';
  return [
    { label: 'total return', strategy: pct(m.totalReturn), benchmark: (b) => pct(b.totalReturn) },
    { label: 'CAGR', strategy: pct(m.cagr), benchmark: (b) => pct(b.cagr), annualised: true },
    { label: 'volatility (ann.)', strategy: pct(m.volatility), benchmark: (b) => pct(b.volatility) },
    { label: 'Sharpe', strategy: fixed(m.sharpe), benchmark: (b) => fixed(b.sharpe), annualised: true },
    { label: 'Sortino', strategy: fixed(m.sortino), benchmark: (b) => fixed(b.sortino) },
    { label: 'Calmar', strategy: fixed(m.calmar), benchmark: (b) => fixed(b.calmar) },
    { label: 'max drawdown', strategy: pct(m.maxDrawdown), benchmark: (b) => pct(b.maxDrawdown) },
    { label: 'max drawdown duration', strategy: days(m.maxDrawdownDurationMs), benchmark: (b) => days(b.maxDrawdownDurationMs) },
    { label: 'alpha vs index (ann.)', strategy: '', benchmark: (b) => pct(b.relative.alpha) },
    { label: 'beta vs index', strategy: '', benchmark: (b) => fixed(b.relative.beta) },
    { label: 'information ratio vs index', strategy: '', benchmark: (b) => fixed(b.relative.informationRatio) },
    { label: 'fills', strategy: String(m.trades), benchmark: none },
    { label: 'closed trades (sales)', strategy: String(m.closedTrades), benchmark: none },
    { label: 'win rate', strategy: pct(m.winRate), benchmark: none },
    { label: 'profit factor', strategy: fixed(m.profitFactor), benchmark: none },
    { label: 'expectancy (USD/trade)', strategy: usd(m.expectancy), benchmark: none },
    { label: 'average win / loss (USD)', strategy: `${usd(m.averageWin)} / ${usd(m.averageLoss)}`, benchmark: none },
    { label: 'best / worst trade (USD)', strategy: `${usd(m.bestTrade)} / ${usd(m.worstTrade)}`, benchmark: none },
    { label: 'longest losing streak', strategy: String(m.longestLosingStreak), benchmark: none },
    { label: 'turnover', strategy: `${fixed(m.turnover)}x`, benchmark: none },
    { label: 'fees paid (USD)', strategy: usd(m.feesPaid), benchmark: none },
    { label: 'exposure', strategy: pct(m.exposure), benchmark: none },
  ];
}

export const isShortWindow = (report: Pick<BacktestReport, 'warnings'>) => report.warnings.some((w) => w.startsWith('the window is'));

/** Year x month grid of returns, with the year's compounded return last. */
export function monthlyGrid(monthly: BacktestReport['monthlyReturns']): { year: string; months: (number | null)[]; total: number }[] {
  const years = new Map<string, (number | null)[]>();
  for (const m of monthly) {
    const [y, mo] = m.month.split('-') as [string, string];
    if (!years.has(y)) years.set(y, Array(12).fill(null));
    years.get(y)![Number(mo) - 1] = m.return;
  }
  return [...years].map(([year, months]) => ({ year, months, total: months.reduce<number>((a, r) => a * (1 + (r ?? 0)), 1) - 1 }));
}

const LIST_LIMIT = 15;
/** The LIST_LIMIT items of largest `size`, in their order: a list sorted worst first, cut at its head, would hide its best. */
function largest<T>(items: readonly T[], size: (item: T) => number): T[] {
  if (items.length <= LIST_LIMIT) return [...items];
  const kept = new Set(
    items
      .map((item, i) => ({ i, size: size(item) }))
      .sort((a, b) => b.size - a.size || a.i - b.i)
      .slice(0, LIST_LIMIT)
      .map((x) => x.i),
  );
  return items.filter((_, i) => kept.has(i));
}
const more = (n: number) => (n > LIST_LIMIT ? [`… ${n - LIST_LIMIT} more in report.json and report.html`] : []);

/** The terminal form of the report: the figures, then the tables that are not too long to print. */
/** A fill's cells in a trades table, the terminal's and the page's: time (to the minute, UTC), instrument, side, quantity, price, fee, realised P&L, time held. */
export function fillCells(report: Pick<BacktestReport, 'labels'>, f: ReportFillRow): string[] {
  return [f.at!.slice(0, 16), labelOf(report, f.instrument), f.side, amount(f.quantity), amount(f.price), usd(f.feeUsd), usd(f.realisedPnl), hours(f.holdingHours)];
}

export function renderTable(report: BacktestReport): string {
  const benches = report.benchmarks;
  const short = isShortWindow(report);
  const head = ['', report.strategy.name, ...benches.map((b) => `hold ${b.indexId}`)];
  const rows = metricRows(report.metrics).map((r) => [r.annualised && short ? `${r.label} (!)` : r.label, r.strategy, ...benches.map((b) => r.benchmark(b))]);
  const lines = [
    `${report.strategy.name} ${minuteText(report.settings.from!)} .. ${minuteText(report.settings.to!)} (${report.settings.interval}), run ${report.runId}, fills ${report.fills.hash.slice(0, 12)}`,
    formatTable([head, ...rows]),
  ];
  if (short) lines.push(`(!) ${report.warnings[0]}`);
  // The warnings that qualify every figure above; the others head their own sections below.
  for (const prefix of [NARROWED_PREFIX, HOLES_PREFIX]) {
    const warning = report.warnings.find((w) => w.startsWith(prefix));
    if (warning) lines.push(`(!) ${warning}`);
  }

  if (report.instruments.length > 0) {
    lines.push('', `P&L by instrument (USD)${report.instruments.length > LIST_LIMIT ? `: the ${LIST_LIMIT} largest, worst first` : ''}`);
    const inst = largest(report.instruments, (i) => Math.abs(i.totalPnl ?? 0)).map((i) => [
      labelOf(report, i.instrument),
      String(i.buys),
      String(i.sells),
      usd(i.feesUsd),
      usd(i.realisedPnl),
      usd(i.unrealisedPnl),
      usd(i.totalPnl),
    ]);
    lines.push(formatTable([['instrument', 'buys', 'sells', 'fees', 'realised', 'unrealised', 'total'], ...inst]), ...more(report.instruments.length));
  }
  const sales = reportSales(report.fills);
  if (sales > 0) {
    lines.push('', `Trades: ${report.fills.count} fills, ${sales} sales; the last ${Math.min(LIST_LIMIT, report.fills.count)}`);
    const tail = [...reportFillRows(report.fills, -LIST_LIMIT)].map((f) => fillCells(report, f));
    lines.push(formatTable([['time', 'instrument', 'side', 'quantity', 'price', 'fee', 'realised', 'held'], ...tail]));
  }
  const alertsShown = report.alerts.list.slice(0, LIST_LIMIT);
  lines.push('', `Alerts: ${report.alerts.count}${report.alerts.count > alertsShown.length ? `; the first ${alertsShown.length}` : ''}`);
  // Not a table: a message is free text, and right-aligned to the longest one it read as ragged.
  lines.push(...alertsShown.map((a) => `${a.at!.slice(0, 16)}  ${plainText(a.message)}`));
  lines.push('', `Rejected orders: ${report.rejections.count}`);
  if (report.rejections.count > 0) {
    lines.push(
      formatTable([
        ['reason', 'count', 'instruments', 'example'],
        ...report.rejections.byReason.map((r) => [r.code, String(r.count), fewNames(r.instruments.map((i) => labelOf(report, i))), r.example]),
      ]),
    );
  }
  lines.push('', `Open positions at the end: ${report.openPositions.length}`);
  if (report.openPositions.length > 0) {
    const open = report.openPositions.slice(0, LIST_LIMIT).map((p) => [labelOf(report, p.instrument), amount(p.quantity), amount(p.price), usd(p.valueUsd), usd(p.unrealisedPnl)]);
    lines.push(formatTable([['instrument', 'quantity', 'last price', 'value', 'unrealised'], ...open]), ...more(report.openPositions.length));
  }
  if (report.monthlyReturns.length > 0) {
    lines.push('', 'Monthly returns');
    const grid = monthlyGrid(report.monthlyReturns).map((y) => [y.year, ...y.months.map((m) => (m === null ? '' : pct(m))), pct(y.total)]);
    lines.push(formatTable([['', ...MONTHS, 'year'], ...grid]));
  }
  if (report.drawdowns.length > 0) {
    lines.push('', 'Worst drawdowns');
    const dd = report.drawdowns.map((d) => [d.start!.slice(0, 10), d.trough!.slice(0, 10), d.recovery?.slice(0, 10) ?? 'not yet', pct(d.depth), `${fixed(d.days, 1)} d`]);
    lines.push(formatTable([['peak', 'trough', 'recovered', 'depth', 'length'], ...dd]));
  }
  const gaps = gapsInRun(report);
  if (gaps.length > 0) lines.push('', 'Gaps in the cached history', ...gaps.slice(0, LIST_LIMIT).map(gapText), ...more(gaps.length));
  if (report.events.parked.count > 0) lines.push(`warning: ${report.events.parked.count} event(s) failed in the strategy and were skipped: ${report.events.parked.errors.map(failureLine).join('; ')}`);
  lines.push('', `Conventions: ${report.conventions}`);
  return `${lines.join('\n')}\n`;
}

/** A parked event's error as one line: its message, and where it was thrown when a frame outside the packages says (the strategy's file and line); report.json keeps the stack. */
export function failureLine(error: string): string {
  const [first = '', ...frames] = error.split('\n');
  const at = frames
    .map((f) => /\(([^()]+:\d+:\d+)\)\s*$/.exec(f)?.[1] ?? /^\s*at\s+(\S+:\d+:\d+)\s*$/.exec(f)?.[1])
    .find((where) => where !== undefined && !where.startsWith('node:') && !where.includes('/node_modules/'));
  return at === undefined ? first : `${first}, at ${relative(process.cwd(), at.replace(/^file:\/\//, ''))}`;
}

export function formatTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
