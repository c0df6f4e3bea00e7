import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, silentLogger } from '../../src/core/index.ts';
import type { BotControl } from '../../src/http/server.ts';
import { TelegramCommands } from '../../src/http/telegram.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { readDb, waitFor } from '../helpers/daemon.ts';
import { type HttpDaemon, get, startHttpDaemon } from '../helpers/http-daemon.ts';
import { testSandbox } from '../helpers/sandbox.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const BOT_TOKEN = '123456:fake-bot-token-for-tests';
const CHAT = 4242;

/** A local fake of the Telegram Bot API: updates are queued by the test, replies recorded. */
class FakeBotApi {
  readonly sent: { chat_id: number | string; text: string }[] = [];
  readonly offsets: number[] = [];
  private queue: unknown[] = [];
  private nextId = 1;
  server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const parsed = JSON.parse(body || '{}');
        const reply = (result: unknown) => {
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify({ ok: true, result }));
        };
        if (req.url === `/bot${BOT_TOKEN}/getUpdates`) {
          this.offsets.push(parsed.offset);
          // Confirmed updates (below the offset) are gone, as on Telegram.
          this.queue = this.queue.filter((u) => (u as { update_id: number }).update_id >= parsed.offset);
          // A short long-poll: answer at once when there is something, else after 200 ms.
          const answer = () => reply(this.queue);
          if (this.queue.length > 0) answer();
          else setTimeout(answer, 200);
        } else if (req.url === `/bot${BOT_TOKEN}/sendMessage`) {
          this.sent.push(parsed);
          reply({ message_id: this.sent.length });
        } else {
          res.writeHead(404).end(JSON.stringify({ ok: false, description: 'Not Found' }));
        }
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  say(chat: number, text: string): void {
    this.queue.push({ update_id: this.nextId++, message: { message_id: this.nextId, chat: { id: chat, type: 'private' }, text } });
  }

  async reply(after: number): Promise<string> {
    await waitFor('a reply', () => this.sent.length > after);
    return this.sent[after]!.text;
  }
}

let sb: Sandbox;
let bot: FakeBotApi;
let d: HttpDaemon;

beforeAll(async () => {
  sb = await testSandbox({ speed: 1, startTime: Date.now(), rateWindowMs: 10_000 });
  bot = new FakeBotApi();
  await bot.start();
  d = await startHttpDaemon(
    sb,
    {
      alerts: {
        sinks: [
          // Alerts of a type that never comes here: every message the bot sends is a command's reply.
          { type: 'telegram', botToken: 'env:TG_TOKEN', chatId: CHAT, baseUrl: bot.url, commands: true, filter: { types: ['index.delisted'], strategyAlerts: false } },
        ],
      },
    },
    { TG_TOKEN: BOT_TOKEN },
  );
  await waitFor('ready', async () => (await get(`${d.url}/readyz`)).status === 200);
}, 60_000);
afterAll(async () => {
  expect(await d.stop()).toBe(0);
  bot.server.close();
  sb.close();
});

const paused = () => readDb(d.db, (db) => (db.prepare("SELECT value FROM runtime WHERE key = 'pausedStrategies'").get() as { value: string } | undefined)?.value ?? '[]');

describe('Telegram commands against a fake Bot API', () => {
  it('answers the sink’s chat: /status, /strategies, /pause, /resume, /parked, /retry', async () => {
    let n = bot.sent.length;
    bot.say(CHAT, '/status');
    expect(await bot.reply(n++)).toMatch(/^indexbot: last successful poll \d+ s ago\n2 indexes, 3 strategies \(0 paused\), 0 alerts pending\nno poll failing$/);
    bot.say(CHAT, '/strategies@indexbot_bot');
    expect(await bot.reply(n++)).toMatch(/^rebalance-front-run: equity \d+\.\d\d, P&L -?\d+\.\d\d USD, \d+ positions, 0 parked$/m);
    bot.say(CHAT, '/pause rebalance-alert');
    expect(await bot.reply(n++)).toBe('rebalance-alert paused: its events wait');
    expect(JSON.parse(paused())).toEqual(['rebalance-alert']);
    bot.say(CHAT, '/pause rebalance-alert');
    expect(await bot.reply(n++)).toBe('rebalance-alert was paused already');
    bot.say(CHAT, '/resume rebalance-alert');
    expect(await bot.reply(n++)).toBe('rebalance-alert resumed');
    expect(JSON.parse(paused())).toEqual([]);
    // Who paused what, in the daemon's log (trial 35: the command without its strategy, and no line of the pause).
    const log = d.daemon.output();
    expect(log).toMatch(/"command":"\/pause","args":\["rebalance-alert"\],"msg":"telegram command"/);
    expect(log).toMatch(/"strategy":"rebalance-alert","msg":"strategy paused: its events wait in the log"/);
    expect(log).toMatch(/"strategy":"rebalance-alert","msg":"strategy resumed: it is given the events that waited"/);
    bot.say(CHAT, '/parked');
    expect(await bot.reply(n++)).toBe('no parked events');
    bot.say(CHAT, '/retry rebalance-alert');
    expect(await bot.reply(n++)).toBe('rebalance-alert: 0 parked events delivered');
    bot.say(CHAT, '/pause nope');
    expect(await bot.reply(n++)).toMatch(/^no strategy named "nope" is running/);
    bot.say(CHAT, '/pause');
    expect(await bot.reply(n++)).toMatch(/^usage: \/pause NAME \(running: /);
    bot.say(CHAT, '/help');
    expect(await bot.reply(n++)).toBe('commands: /status, /strategies, /pause NAME, /resume NAME, /parked, /retry NAME');
    expect(bot.sent.every((m) => m.chat_id === CHAT)).toBe(true);
    // Each update is confirmed: getUpdates asks past the last one seen.
    await waitFor('the last update confirmed', () => Math.max(...bot.offsets) >= 11);
    expect(Math.max(...bot.offsets)).toBe(11);
  });

  it('ignores and logs a command from another chat', async () => {
    const n = bot.sent.length;
    bot.say(999, '/pause rebalance-alert');
    await waitFor('the foreign command logged', () => d.daemon.output().includes('telegram command from another chat ignored'));
    bot.say(CHAT, '/status');
    await bot.reply(n);
    // Only the second command was answered, and nothing was paused.
    expect(bot.sent.slice(n).map((m) => m.chat_id)).toEqual([CHAT]);
    expect(JSON.parse(paused())).toEqual([]);
    const line = d.daemon
      .output()
      .split('\n')
      .find((l) => l.includes('telegram command from another chat ignored'))!;
    expect(JSON.parse(line)).toMatchObject({ chatId: '999', command: '/pause' });
    expect(d.daemon.output()).not.toContain(BOT_TOKEN);
  });
});

describe('Telegram commands against a server that answers an empty poll at once', () => {
  /** A Bot API whose getUpdates answers `[]` at once, as a proxy or mock that does not hold the long poll does. */
  async function eagerBotApi() {
    let calls = 0;
    const server = createServer((req, res) => {
      req.resume().on('end', () => {
        calls += 1;
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ ok: true, result: [] }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls: () => calls, close: () => new Promise((r) => server.close(r)) };
  }

  function commands(url: string, o: { clock?: ManualClock; minEmptyPollMs?: number }) {
    const store = SnapshotStore.open(tempDbPath());
    const sink = { type: 'telegram' as const, name: 'tg', botToken: BOT_TOKEN, chatId: CHAT, baseUrl: url, commands: true };
    // Only the store is read while no update comes.
    const t = new TelegramCommands({ sink: sink as never, control: { store } as BotControl, logger: silentLogger, ...o });
    return { t, store };
  }

  it('asks again only once the floor has passed on its clock (trial 30: 120,000 calls in 65 s)', async () => {
    const api = await eagerBotApi();
    const clock = new ManualClock(Date.now());
    const { t, store } = commands(api.url, { clock });
    try {
      t.start();
      await waitFor('the first poll', () => api.calls() === 1);
      await new Promise((r) => setTimeout(r, 300));
      expect(api.calls()).toBe(1);
      await clock.advance(999);
      await new Promise((r) => setTimeout(r, 100));
      expect(api.calls()).toBe(1);
      await clock.advance(1);
      await waitFor('the second poll', () => api.calls() === 2);
    } finally {
      await t.stop();
      store.close();
      await api.close();
    }
  });

  it('on real timers, polls such a server a few times a second at most', async () => {
    const api = await eagerBotApi();
    const { t, store } = commands(api.url, { minEmptyPollMs: 200 });
    try {
      t.start();
      await new Promise((r) => setTimeout(r, 1_500));
      // About 7 at 200 ms apart; fewer on a loaded machine, never the thousands it made before.
      expect(api.calls()).toBeGreaterThanOrEqual(2);
      expect(api.calls()).toBeLessThanOrEqual(9);
    } finally {
      await t.stop();
      store.close();
      await api.close();
    }
  });
});
