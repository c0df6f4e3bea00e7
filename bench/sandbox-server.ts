/** The sandbox in its own process for bench/sandbox.ts: reports its URL, then its RSS when asked. */
import { startSandbox } from '../src/sandbox/index.ts';

const sandbox = await startSandbox({ port: 0, rateLimits: false, speed: 1 });
process.send?.({ baseUrl: sandbox.baseUrl });
process.on('message', async (msg) => {
  if (msg === 'rss') process.send?.({ rss: process.memoryUsage().rss });
  if (msg === 'stop') {
    await sandbox.close();
    process.exit(0);
  }
});
