import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('indexbot sandbox', () => {
  it('starts on 127.0.0.1, prints its base URL and a key per tier, and stops cleanly on SIGTERM', async () => {
    const child = spawn(process.execPath, ['bin/indexbot.js', 'sandbox', '--port', '0', '--seed', '3'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const baseUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no base URL printed: ${out}`)), 15_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /base URL: (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(out);
        if (m && out.includes('Ctrl-C')) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
    });
    for (const tier of ['basic', 'premium', 'enterprise']) expect(out).toMatch(new RegExp(`${tier}\\s+sk_sandbox_${tier}_`));
    const res = await fetch(`${baseUrl}/indexes`);
    expect(res.status).toBe(200);
    // 'close', not 'exit': what it wrote last may still be in the pipes at 'exit'.
    const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(out).toContain('sandbox stopped (SIGTERM)');
    expect(err).toBe('');
  });

  it('bound beyond loopback, warns in one line that whoever reaches it can use its keys and control routes', async () => {
    const child = spawn(process.execPath, ['bin/indexbot.js', 'sandbox', '--port', '0', '--host', '0.0.0.0', '--control'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not started: ${out} ${err}`)), 15_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('Ctrl-C')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    // 'close', not 'exit': what it wrote last may still be in the pipes at 'exit'.
    const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(err).toBe(
      'indexbot: warning: --host 0.0.0.0 serves the sandbox beyond this machine: whoever reaches it can use the demo keys below, and its control routes (its clock, keys and faults), with no other check; it is a test server\n',
    );
  });

  it('rejects a bad option with a message naming the value', async () => {
    const child = spawn(process.execPath, ['bin/indexbot.js', 'sandbox', '--port', 'abc'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).not.toBe(0);
    expect(err).toContain('expected a whole number from 0 to 65535, got "abc"');
  });
});
