/**
 * Requests per second the sandbox serves for GET composition over keep-alive loopback
 * connections, rate limits off, with the server in its own process; and the server's RSS.
 */
import { fork } from 'node:child_process';
import { Agent, get } from 'node:http';

const DURATION_MS = Number(process.env.BENCH_SECONDS ?? 5) * 1_000;
const CONNECTIONS = 32;

function once<T>(child: ReturnType<typeof fork>): Promise<T> {
  return new Promise((resolve) => child.once('message', (m) => resolve(m as T)));
}

export async function run(): Promise<void> {
  const child = fork(new URL('./sandbox-server.ts', import.meta.url).pathname, { execArgv: ['--import', 'tsx'] });
  const { baseUrl } = await once<{ baseUrl: string }>(child);
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const url = `${baseUrl}/indexes/sindex/composition`;
  const hit = () =>
    new Promise<number>((resolve, reject) => {
      get(url, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      }).on('error', reject);
    });
  for (let i = 0; i < 200; i++) await hit();
  let done = 0;
  let failed = 0;
  const start = Date.now();
  const end = start + DURATION_MS;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < end) {
        if ((await hit()) === 200) done++;
        else failed++;
      }
    }),
  );
  const seconds = (Date.now() - start) / 1000;
  child.send('rss');
  const { rss } = await once<{ rss: number }>(child);
  child.send('stop');
  agent.destroy();
  console.log(`sandbox: GET composition, ${CONNECTIONS} keep-alive connections, ${seconds.toFixed(1)} s`);
  console.log(`  ${(done / seconds).toFixed(0)} requests/s (${done} ok, ${failed} not 200), server RSS ${(rss / 1024 / 1024).toFixed(1)} MiB`);
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
