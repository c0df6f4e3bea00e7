import { describe, expect, it } from 'vitest';
import { faceAt } from '../../src/cli/daemon-control.ts';
import { UsageError } from '../../src/core/index.ts';

describe('--url of the commands that reach a daemon (faceAt)', () => {
  it('keeps the path a reverse proxy serves the face under, without a trailing slash', () => {
    expect(faceAt('http://127.0.0.1:9464/', undefined).url).toBe('http://127.0.0.1:9464');
    expect(faceAt('https://ops.example/bots/alpha/', 'tok').url).toBe('https://ops.example/bots/alpha');
  });

  it('refuses what is no http(s) address, or holds credentials, naming --url', () => {
    for (const raw of ['127.0.0.1:9464', 'localhost:9464', 'ftp://host/', '']) {
      expect(() => faceAt(raw, undefined), raw).toThrow(UsageError);
      expect(() => faceAt(raw, undefined), raw).toThrow(/^--url: expected the daemon's HTTP address such as http:\/\/127\.0\.0\.1:9464, got /);
    }
  });

  it('refuses an address with credentials without repeating them', () => {
    const refusal = (() => {
      try {
        faceAt('http://ops:hunter2-long-password@host:9464', undefined);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(refusal).toBeInstanceOf(UsageError);
    expect(refusal?.message).toBe("--url: expected the daemon's HTTP address without credentials (the token goes in INDEXBOT_HTTP_TOKEN or http.token)");
  });
});
