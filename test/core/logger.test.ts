import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import axios from 'axios';
import { describe, expect, it } from 'vitest';
import { countingInfo, createLogger } from '../../src/core/index.ts';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, logger: createLogger({ format: 'json', level: 'debug', destination }) };
}

describe('createLogger', () => {
  it('blanks out the value of a credential from the environment wherever a line quotes it, message or field', () => {
    const key = 'sk_live_CANARY_abcdefghijklmnop';
    const previous = process.env.INDEXBOT_API_KEY;
    process.env.INDEXBOT_API_KEY = key;
    try {
      const { lines, logger } = capture();
      logger.warn({ file: 'keyed.ts', error: `cannot init with key ${key}`, nested: { list: [`k=${key}`] } }, `skipping keyed.ts: cannot init with key ${key}`);
      expect(lines).toHaveLength(1);
      expect(lines[0]).not.toContain(key);
      expect(JSON.parse(lines[0]!)).toMatchObject({
        file: 'keyed.ts',
        error: 'cannot init with key [REDACTED]',
        nested: { list: ['k=[REDACTED]'] },
        msg: 'skipping keyed.ts: cannot init with key [REDACTED]',
      });
    } finally {
      if (previous === undefined) delete process.env.INDEXBOT_API_KEY;
      else process.env.INDEXBOT_API_KEY = previous;
    }
  });

  it('logs an axios error, under err or error, without its request headers or raw header text', async () => {
    const token = 'eyJhbGciOiJSUzI1NiJ9.CANARYpayload.CANARYsignature';
    const server = createServer((_req, res) => {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/portfolio`;
    const error = await axios.get(url, { headers: { Authorization: `Bearer ${token}` } }).catch((e: unknown) => e);
    await new Promise((r) => server.close(r));
    // The raw header text the request went out with does hold the token.
    expect(JSON.stringify((error as { request: { _header: string } }).request._header)).toContain(token);

    const { lines, logger } = capture();
    logger.error({ err: error }, 'request failed');
    logger.warn({ error, apiKey: 'sk_CANARY', headers: { authorization: `Bearer ${token}` } }, 'again');
    const text = lines.join('');
    expect(text).not.toContain('CANARY');
    expect(JSON.parse(lines[0]!).err).toEqual({ name: 'AxiosError', code: 'ERR_BAD_RESPONSE', message: 'Request failed with status code 500' });
    expect(JSON.parse(lines[1]!)).toMatchObject({ apiKey: '[REDACTED]', headers: { authorization: '[REDACTED]' } });
  });

  it('writes no terminal escape or line break from a message, whatever text it quotes', () => {
    const { lines, logger } = capture();
    logger.info({}, 'sindex: +\u001b[31mRED\u001b[0m 10%\nFAKE LINE \u009b2J');
    expect(JSON.parse(lines[0]!).msg).toBe('sindex: +RED 10% FAKE LINE ');
  });
});

describe('countingInfo', () => {
  it('counts info lines, its children’s too, and writes every other level with its bindings', () => {
    const { lines, logger } = capture();
    const counting = countingInfo(logger);
    const run = counting.logger.child({ run: 2 });
    run.info({ a: 1 }, 'order refused');
    counting.logger.info({}, 'another');
    run.debug({}, 'detail');
    run.warn({ b: 2 }, 'odd');
    run.error({}, 'broken');
    expect(counting.counted()).toBe(2);
    expect(lines.map((l) => JSON.parse(l) as { msg: string; run?: number; level: number }).map((l) => [l.level, l.msg, l.run])).toEqual([
      [20, 'detail', 2],
      [40, 'odd', 2],
      [50, 'broken', 2],
    ]);
  });
});
