import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { ConfigError, UsageError } from '../../src/core/index.ts';
import { caught } from '../helpers/caught.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

function file(content: unknown): string {
  const path = join(dirname(tempDbPath()), 'indexbot.json');
  writeFileSync(path, JSON.stringify({ baseUrl: 'http://127.0.0.1:7420/v1', ...(content as object) }));
  return path;
}

describe('the http config', () => {
  it('is off by default; --http wins over http.listen; defaults for the rest', () => {
    expect(loadConfig({ config: file({}) }, {}).http).toBeUndefined();
    const path = file({ http: { listen: '127.0.0.1:9464' } });
    expect(loadConfig({ config: path }, {}).http).toEqual({
      host: '127.0.0.1',
      port: 9464,
      source: `${path}: http.listen 127.0.0.1:9464`,
      fromFlag: false,
      token: undefined,
      readyMaxAgeS: 300,
      maxConnections: 1024,
    });
    expect(loadConfig({ config: path, http: 'localhost:0' }, {}).http).toMatchObject({ host: 'localhost', port: 0 });
  });

  it('reads the token from the environment, and refuses a missing or short one without echoing it', () => {
    const path = file({ http: { listen: '0.0.0.0:9464', token: 'env:HTTP_TOKEN' } });
    expect(loadConfig({ config: path }, { HTTP_TOKEN: 'sixteen-chars-ok' }).http?.token).toBe('sixteen-chars-ok');
    const missing = caught<ConfigError>(() => loadConfig({ config: path }, {}));
    expect(missing).toBeInstanceOf(ConfigError);
    expect(missing.message).toBe(`${path}: http.token: environment variable HTTP_TOKEN is not set`);
    const short = caught<ConfigError>(() => loadConfig({ config: path }, { HTTP_TOKEN: 'tiny-secret' }));
    expect(short.message).toBe(`${path}: http.token: expected at least 16 characters, got 11`);
    expect(short.message).not.toContain('tiny-secret');
  });

  it('refuses an address off loopback without a token, a bad address, and values out of range', () => {
    expect(caught<ConfigError>(() => loadConfig({ config: file({}), http: '0.0.0.0:9464' }, {})).message).toMatch(/^http address 0\.0\.0\.0:9464 is not loopback: set http\.token in /);
    expect(caught<ConfigError>(() => loadConfig({ config: file({}), http: '9464' }, {})).message).toBe('--http: expected host:port such as 127.0.0.1:9464, got "9464"');
    // Dotted digits that are no IPv4 address were told they are not loopback and need a token.
    const dotted = caught<UsageError>(() => loadConfig({ config: file({}), http: '999.1.1.1:80' }, {}));
    expect(dotted).toBeInstanceOf(UsageError);
    expect(dotted.message).toBe('--http: 999.1.1.1 is not an IP address (IPv4 is four numbers 0 to 255, such as 127.0.0.1), in "999.1.1.1:80"');
    const inFile = file({ http: { listen: '1.2.3:80', token: 'sixteen-chars-ok' } });
    expect(caught<ConfigError>(() => loadConfig({ config: inFile }, {}))).toBeInstanceOf(ConfigError);
    expect(caught<ConfigError>(() => loadConfig({ config: inFile }, {})).message).toBe(
      `${inFile}: http.listen: 1.2.3 is not an IP address (IPv4 is four numbers 0 to 255, such as 127.0.0.1), in "1.2.3:80"`,
    );
    expect(caught<ConfigError>(() => loadConfig({ config: file({ http: { listen: '127.0.0.1:1', maxConnections: 0 } }) }, {})).message).toMatch(/http\.maxConnections: /);
    expect(caught<ConfigError>(() => loadConfig({ config: file({ http: { listen: '127.0.0.1:1', readyMaxAgeS: 1e9 } }) }, {})).message).toMatch(/http\.readyMaxAgeS: /);
    expect(caught<ConfigError>(() => loadConfig({ config: file({ http: { listen: '127.0.0.1:1', port: 1 } }) }, {})).message).toMatch(/unknown key "http\.port"/);
  });
});

describe('http settings that turn nothing on', () => {
  it('are named when the file sets http but neither http.listen nor --http turns the face on', () => {
    const path = file({ http: { token: 'env:HTTP_TOKEN', readyMaxAgeS: 60 } });
    // The token is not read (nor required) while the face is off.
    const config = loadConfig({ config: path }, {});
    expect(config.http).toBeUndefined();
    expect(config.httpUnused).toBe(`${path}: http.token, http.readyMaxAgeS set but not http.listen: no HTTP face (metrics, dashboard, API, event stream) runs; set http.listen or pass --http`);
    expect(loadConfig({ config: path, http: '127.0.0.1:0' }, { HTTP_TOKEN: 'sixteen-chars-ok' }).httpUnused).toBeUndefined();
    expect(loadConfig({ config: file({ http: { listen: '127.0.0.1:0' } }) }, {}).httpUnused).toBeUndefined();
    expect(loadConfig({ config: file({}) }, {}).httpUnused).toBeUndefined();
    // Commands that run no daemon say nothing of it.
    expect(loadConfig({ config: path }, {}, { services: false }).httpUnused).toBeUndefined();
    // A token written in the file is checked though unused: doctor passed one that run --http then refused (found by a trial).
    const short = file({ http: { token: 'short' } });
    expect(caught<ConfigError>(() => loadConfig({ config: short }, {})).message).toBe(`${short}: http.token: expected at least 16 characters, got 5`);
  });
});
