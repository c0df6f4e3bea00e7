import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { type DaemonProcess, lockIsFree, sandboxConfig, spawnDaemon, waitFor } from '../helpers/daemon.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

let sb: Sandbox;
beforeAll(async () => {
  sb = await testSandbox({ speed: 1, startTime: Date.now(), rateWindowMs: 10_000 });
});
afterAll(() => sb.close());

const STARTS = 20;

/**
 * Starts `count` daemons on one database; a fixture strategy holds each start at a barrier
 * until all have loaded, so that they reach the lock together. Returns the one left running.
 */
async function race(config: string, db: string, count: number): Promise<DaemonProcess> {
  const barrier = mkdtempSync(join(tmpdir(), 'indexbot-barrier-'));
  const daemons = Array.from({ length: count }, () => spawnDaemon(['--config', config], { INDEXBOT_API_KEY: sb.keys.premium, INDEXBOT_TEST_BARRIER_DIR: barrier }));
  const exits = new Map<DaemonProcess, number | null>();
  for (const d of daemons) void d.exited.then((code) => exits.set(d, code));
  try {
    // Twenty interpreters starting on a shared machine: the waits follow progress, not a guess.
    await waitFor('every start at the barrier', () => readdirSync(barrier).length === count, 400_000);
    writeFileSync(join(barrier, 'go'), '');
    await waitFor(`${count - 1} refused starts`, () => exits.size >= count - 1, 120_000);
    const running = daemons.filter((d) => !exits.has(d));
    expect(running).toHaveLength(1);
    const holder = running[0]!;
    await waitFor('the holder running', () => holder.output().includes('indexbot running'), 60_000);
    for (const d of daemons) {
      if (d === holder) continue;
      expect(exits.get(d)).toBe(78);
      expect(d.output()).toContain(`another indexbot (pid ${holder.child.pid}) is already running on ${db}`);
    }
    return holder;
  } catch (e) {
    for (const d of daemons) d.child.kill('SIGKILL');
    throw e;
  }
}

describe('the run lock', () => {
  it(`lets exactly one of ${STARTS} daemons started at the same moment on one database run, also over a lock left by kill -9; the others exit 78 naming it`, async () => {
    const db = tempDbPath();
    const config = sandboxConfig(sb, db, { indexes: ['sindex'], shutdownGraceMs: 3_000, strategies: { dir: 'test/fixtures/strategies/barrier' } });
    const first = await race(config, db, STARTS);
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await race(config, db, STARTS);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(lockIsFree(db)).toBe(true);
  }, 1_000_000);
});
