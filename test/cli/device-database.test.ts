import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const cli = (args: string[]) => spawnSync(process.execPath, ['bin/indexbot.js', ...args], { encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL', env: { ...process.env } });

// Trial 25: `run --db /dev/null` opened the device, failed its first write as a disk error
// (exit 75, "retry later": a service restarts it for ever) and left /dev/null.lock and
// /dev/null-journal behind.
describe('a --db that is a device, not a file', () => {
  it.skipIf(!existsSync('/dev/null'))('is refused in one line, exit 78, before anything is made beside it', () => {
    const before = ['/dev/null.lock', '/dev/null-journal'].filter((p) => existsSync(p));
    for (const args of [
      ['run', '--db', '/dev/null', '--base-url', 'http://127.0.0.1:9/v1', '--strategies', 'test/fixtures/strategies/counting'],
      ['backtest', '--db', '/dev/null', '--strategy', 'rebalance-alert'],
    ]) {
      const r = cli(args);
      expect(r.stderr).toBe('indexbot: /dev/null is a device, not a database file; pass --db a file [STORE_UNAVAILABLE]\n');
      expect(r.status).toBe(78);
    }
    expect(['/dev/null.lock', '/dev/null-journal'].filter((p) => existsSync(p))).toEqual(before);
  });
});
