import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';

export interface TestRedis {
  url: string;
  port: number;
  /** SIGKILLs the server (no shutdown, nothing saved): what a crash looks like to clients. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A free loopback port (closed again at once; the caller binds it next). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * Debian's `redis-server` on a free loopback port, no persistence: one per test file, stopped
 * in `afterAll`. No mock of Redis anywhere.
 */
export async function startRedis(extraArgs: string[] = []): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const launch = () =>
    new Promise<void>((resolve, reject) => {
      const c = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extraArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
      child = c;
      let out = '';
      const timer = setTimeout(() => reject(new Error(`redis-server did not start on ${port}: ${out}`)), 10_000);
      c.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      c.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      c.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited with ${code}: ${out}`));
      });
    });
  const end = async (signal: NodeJS.Signals) => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill(signal);
    await exited;
  };
  await launch();
  return { url: `redis://127.0.0.1:${port}`, port, kill: () => end('SIGKILL'), restart: launch, stop: () => end('SIGTERM') };
}

export interface TestRedisCluster {
  /** `redis-cluster://` with the first node only: the client finds the others. */
  url: string;
  nodes: TestRedis[];
  stop(): Promise<void>;
}

/**
 * A Redis Cluster of `size` masters (no replicas) made of Debian's `redis-server` on free
 * loopback ports, its slots assigned by `redis-cli --cluster create`; resolves once every node
 * says the cluster is ok.
 */
export async function startRedisCluster(size = 3): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'indexbot-redis-cluster-'));
  const nodes = await Promise.all(
    Array.from({ length: size }, (_, i) => startRedis(['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${i}.conf`), '--cluster-node-timeout', '5000'])),
  );
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  };
  const cli = (...args: string[]) => spawnSync('redis-cli', args, { encoding: 'utf8', timeout: 30_000 });
  const created = cli('--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes');
  if (created.status !== 0) {
    await stop();
    throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
  }
  const deadline = Date.now() + 30_000;
  while (!nodes.every((n) => /cluster_state:ok/.test(cli('-p', String(n.port), 'cluster', 'info').stdout))) {
    if (Date.now() > deadline) {
      await stop();
      throw new Error('the Redis Cluster did not reach cluster_state:ok within 30 s');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url: `redis-cluster://127.0.0.1:${nodes[0]!.port}`, nodes, stop };
}
