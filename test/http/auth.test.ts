import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { parseListenAddress } from '../../src/config/config.ts';
import { isLoopback } from '../../src/config/index.ts';
import { bearerCheck, hostIsLoopback, isCrossSite } from '../../src/http/auth.ts';

const req = (headers: Record<string, string>) => ({ headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])) }) as unknown as IncomingMessage;
const TOKEN = 'correct-horse-battery-staple';

describe('HTTP face: who may ask', () => {
  it('accepts exactly the configured bearer token', () => {
    expect(bearerCheck(req({ Authorization: `Bearer ${TOKEN}` }), TOKEN)).toBe('ok');
    expect(bearerCheck(req({ Authorization: `bearer ${TOKEN}` }), TOKEN)).toBe('ok');
    for (const header of [undefined, '', 'Bearer', 'Bearer ', `Basic ${TOKEN}`, TOKEN]) {
      expect(bearerCheck(req(header === undefined ? {} : { Authorization: header }), TOKEN), String(header)).toBe('missing');
    }
    for (const header of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, 'Bearer wrong']) expect(bearerCheck(req({ Authorization: header }), TOKEN), header).toBe('wrong');
  });

  it('answers loopback Host names only when no token is set', () => {
    for (const host of ['127.0.0.1:9464', 'localhost:9464', '[::1]:9464', '127.1.2.3', 'LOCALHOST:1']) expect(hostIsLoopback(req({ Host: host })), host).toBe(true);
    for (const host of ['evil.example:9464', '10.0.0.1:9464', '[::2]:1', 'localhost.evil.example', '']) expect(hostIsLoopback(req({ Host: host })), host).toBe(false);
    expect(hostIsLoopback(req({}))).toBe(false);
  });

  it('calls a request cross-site by Sec-Fetch-Site or a foreign Origin', () => {
    expect(isCrossSite(req({ Host: '127.0.0.1:9464' }))).toBe(false);
    expect(isCrossSite(req({ Host: '127.0.0.1:9464', Origin: 'http://127.0.0.1:9464', 'Sec-Fetch-Site': 'same-origin' }))).toBe(false);
    expect(isCrossSite(req({ Host: '127.0.0.1:9464', 'Sec-Fetch-Site': 'none' }))).toBe(false);
    expect(isCrossSite(req({ Host: '127.0.0.1:9464', 'Sec-Fetch-Site': 'same-site' }))).toBe(true);
    expect(isCrossSite(req({ Host: '127.0.0.1:9464', Origin: 'http://127.0.0.1:9465' }))).toBe(true);
    expect(isCrossSite(req({ Host: '127.0.0.1:9464', Origin: 'null' }))).toBe(true);
  });

  it('parses listen addresses and knows loopback', () => {
    expect(parseListenAddress('127.0.0.1:9464')).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseListenAddress('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseListenAddress('localhost:80')).toEqual({ host: 'localhost', port: 80 });
    for (const bad of ['9464', ':9464', '127.0.0.1', '127.0.0.1:65536', 'a b:1', 'http://x:1']) expect(parseListenAddress(bad), bad).toBeUndefined();
    expect(['127.0.0.1', '::1', 'localhost'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '::', '192.168.1.2', '128.0.0.1'].some(isLoopback)).toBe(false);
  });
});
