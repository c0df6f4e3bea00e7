// One sweep of bench/backtest.ts, on the built package as an installed indexbot runs it: plain
// JavaScript on plain Node, so that neither this process nor its worker threads (which take
// its execArgv) load tsx for anything but the strategy's TypeScript, as the package does.
// `node bench/backtest-sweep.mjs <cache> <workers> <indexes> <years> <first> <count>` prints
// its figures as one JSON line.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';

const { runSweep } = await import(new URL('../dist/backtest/index.js', import.meta.url).href);
const [path, workers, indexes, years, first, count] = process.argv.slice(2);
const FROM = Date.UTC(2022, 0, 1);
const H = 3_600_000;
const file = fileURLToPath(new URL('../strategies/rebalance-front-run.ts', import.meta.url));
const jobs = Array.from({ length: Number(count) }, (_, i) => ({ file, params: { holdHours: 6 + 6 * (Number(first) + i) } }));
const settings = { indexes: Array.from({ length: Number(indexes) }, (_, x) => `idx${x}`), from: FROM, to: FROM + (Number(years) * 365 * 24 - 1) * H, cash: 1e6 };
const t = performance.now();
const cpu0 = process.cpuUsage();
// As `backtest --grid` runs it: report.json and report.html made in the thread that ran the job.
const reports = await runSweep({ db: path, settings, jobs, workers: Number(workers), output: 'report' });
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    seconds: (performance.now() - t) / 1000,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    reports: reports.map((r) => createHash('sha256').update(r.json).digest('hex')),
    rssMiB: process.resourceUsage().maxRSS / 1024,
  }),
);
