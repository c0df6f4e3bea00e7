/** `npm run bench`: every benchmark in turn, each printing its own figures. */
import { run as backtest } from './backtest.ts';
import { run as cacheQueries } from './cache-queries.ts';
import { run as dispatch } from './dispatch.ts';
import { run as ingest } from './ingest.ts';
import { run as rateGate } from './rate-gate.ts';
import { run as sandbox } from './sandbox.ts';
import { run as soak } from './soak.ts';

for (const bench of [rateGate, sandbox, ingest, cacheQueries, dispatch, soak, backtest]) await bench();
