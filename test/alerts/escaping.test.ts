import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpSender, describeEvent, eventAlert, strategyAlert } from '../../src/alerts/index.ts';
import type { IndexbotEvent } from '../../src/detect/index.ts';
import { startReceiver } from '../helpers/receiver.ts';

/** A symbol as a hostile server could send it: a mass mention, Slack control words and a forged link, a terminal escape. */
const HOSTILE = '@everyone <!channel> <https://evil|click> [click](https://evil) \u001b[31mRED\u001b]0;title\u0007\u009b2J\nFAKE LOG LINE';

const event = {
  seq: 1,
  id: 'rebalance.announced:sindex:rb_1',
  type: 'rebalance.announced',
  indexId: 'sindex',
  occurredAt: 0,
  detectedAt: 0,
  payload: { rebalanceId: 'rb_1', announcedAt: 0, effectiveAt: 0, changes: [{ address: 'X', symbol: HOSTILE, action: 'add', oldWeight: 0, newWeight: 0.1 }] },
} as unknown as IndexbotEvent;

// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

async function sent(sink: Parameters<HttpSender['send']>[0], alert = eventAlert(event)) {
  const before = receiver.requests.length;
  expect(await new HttpSender(2_000).send(sink, alert)).toEqual({ ok: true });
  return JSON.parse(receiver.requests[before]!.body) as Record<string, unknown>;
}

describe('server text in alerts', () => {
  it('is one line of plain text in the headline every sink and log line starts from', () => {
    const text = describeEvent(event);
    expect(text).not.toMatch(CONTROL);
    expect(text).toContain('RED');
    expect(text).toContain('FAKE LOG LINE');
  });

  it('reaches the console without terminal escapes', async () => {
    const written: string[] = [];
    const sender = new HttpSender(2_000, (line) => written.push(line));
    await sender.send({ type: 'console', name: 'c' }, { id: 'x', text: `ok ${HOSTILE}`, fields: { type: 't' } });
    expect(written).toHaveLength(1);
    expect(written[0]!.slice(0, -1)).not.toMatch(CONTROL);
    expect(written[0]!.endsWith('\n')).toBe(true);
  });

  it('pings nobody and forges no link on Discord', async () => {
    const body = await sent({ type: 'discord', name: 'd', url: `${receiver.url}/discord` });
    expect(body.allowed_mentions).toEqual({ parse: [] });
    const content = body.content as string;
    expect(content).not.toMatch(CONTROL);
    expect(content).toContain('\\@everyone');
    expect(content).toContain('\\[click\\]\\(https://evil\\)');
    expect(content).not.toMatch(/(^|[^\\])[[<]/);
  });

  it('is escaped for Slack: no <!channel>, no <url|label> link', async () => {
    const text = (await sent({ type: 'slack', name: 's', url: `${receiver.url}/slack` })).text as string;
    expect(text).toContain('&lt;!channel&gt; &lt;https://evil|click&gt;');
    expect(text).not.toMatch(/[<>]/);
    expect(text).not.toMatch(CONTROL);
  });

  it('goes to Telegram as plain text (no parse mode) and to a webhook as data, both without controls', async () => {
    const telegram = await sent({ type: 'telegram', name: 't', botToken: '1:abc', chatId: 5, baseUrl: receiver.url });
    expect(telegram.parse_mode).toBeUndefined();
    expect(telegram.text).toContain('<!channel>');
    expect(telegram.text).not.toMatch(CONTROL);
    const webhook = await sent({ type: 'webhook', name: 'w', url: `${receiver.url}/hook` });
    expect(webhook.text).toContain('@everyone <!channel>');
    expect(webhook.text).not.toMatch(CONTROL);
    // The event itself stays as the server sent it: a machine reads it as data.
    expect(JSON.stringify(webhook.event)).toContain('\\u001b[31m');
  });

  it("gives a webhook a strategy alert's message without controls, its data as the strategy made it (trial 28)", async () => {
    const row = { id: 1, strategy: 'alerter', eventId: event.id, indexId: 'sindex', seq: 1, message: `saw ${HOSTILE}`, data: { raw: HOSTILE }, at: 0 };
    const webhook = await sent({ type: 'webhook', name: 'w', url: `${receiver.url}/hook` }, strategyAlert(row, 'strategy.alert:alerter:db:1'));
    expect(webhook.message).toContain('@everyone <!channel>');
    expect(webhook.message).not.toMatch(CONTROL);
    expect(webhook.text).not.toMatch(CONTROL);
    expect(webhook.data).toEqual({ raw: HOSTILE });
  });
});
