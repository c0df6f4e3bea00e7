/**
 * The other side of bench/http.ts, in its own process so that its work is not counted as the
 * daemon's: `sandbox` serves the API; `sse N URL` holds N event streams open and reads them;
 * `rps URL SECONDS CONCURRENCY` sends keep-alive GETs and prints how many were answered.
 */
import { Agent, request } from 'node:http';
import { startSandbox } from '../src/sandbox/index.ts';

const [mode, ...args] = process.argv.slice(2);

if (mode === 'sandbox') {
  const sb = await startSandbox({ port: 0, seed: 7, speed: 1, control: true, rateWindowMs: 10_000 });
  process.stdout.write(`${JSON.stringify({ baseUrl: sb.baseUrl, origin: sb.origin, key: sb.keys.premium })}\n`);
} else if (mode === 'sse') {
  const [n, url] = [Number(args[0]), args[1]!];
  let open = 0;
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    request(url, { agent: false }, (res) => {
      open++;
      if (open === n) process.stdout.write('open\n');
      res.on('data', (c: Buffer) => (bytes += c.length));
    }).end();
  }
  process.on('SIGTERM', () => {
    process.stdout.write(`${JSON.stringify({ open, bytes })}\n`);
    process.exit(0);
  });
} else if (mode === 'rps') {
  const [url, seconds, concurrency] = [args[0]!, Number(args[1]), Number(args[2])];
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const end = Date.now() + seconds * 1000;
  let ok = 0;
  let failed = 0;
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      request(url, { agent }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) ok++;
          else failed++;
          resolve();
        });
      })
        .on('error', () => {
          failed++;
          resolve();
        })
        .end();
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) await one();
    }),
  );
  process.stdout.write(`${JSON.stringify({ ok, failed, seconds })}\n`);
  agent.destroy();
} else {
  throw new Error(`unknown mode ${mode}`);
}
