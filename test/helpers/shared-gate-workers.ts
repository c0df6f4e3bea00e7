import { spawn } from 'node:child_process';

export interface WorkerConfig {
  baseUrl: string;
  apiKey: string;
  redisUrl?: string | undefined;
  tier: 'basic' | 'premium';
  windowMs: number;
  concurrency: number;
}

export interface WorkerResult {
  okBySecond: Record<string, number>;
  /** Calls that failed (a 429 among them: the worker does not re-queue), by second. */
  failedBySecond: Record<string, number>;
  failed: number;
  shared?: { mode: string; processes: string[]; share: number };
  takeMs: number[];
  /** When (epoch ms) it went back to the shared budget after losing Redis. */
  rejoinedAt: number[];
}

/**
 * Starts `n` bot processes (test/helpers/shared-gate-worker.ts), waits until all are loaded,
 * then lets them run together from the next whole second for `seconds`. `during` runs
 * meanwhile (e.g. to kill Redis); resolves with each one's exit code and result.
 */
export async function runWorkers(n: number, config: WorkerConfig, seconds: number, during?: (start: number) => Promise<void>) {
  const children = Array.from({ length: n }, () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/shared-gate-worker.ts', JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.startsWith('ready\n')) resolve();
      });
      child.once('exit', () => reject(new Error(`worker exited before it was ready: ${out} ${err}`)));
    });
    const done = new Promise<{ code: number | null; result: WorkerResult }>((resolve, reject) =>
      // 'close': the result line may still be in the pipe at 'exit'.
      child.on('close', (code) => {
        try {
          resolve({ code, result: JSON.parse(out.trim().split('\n').pop()!) });
        } catch {
          reject(new Error(`worker exited ${code} without a result: ${out} ${err}`));
        }
      }),
    );
    return { child, ready, done };
  });
  await Promise.all(children.map((c) => c.ready));
  const start = Math.ceil((Date.now() + 500) / 1000) * 1000;
  const end = start + seconds * 1000;
  for (const c of children) c.child.stdin.end(`${start} ${end}\n`);
  await during?.(start);
  return { start, end, results: await Promise.all(children.map((c) => c.done)) };
}
