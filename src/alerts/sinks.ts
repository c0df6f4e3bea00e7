import { createHmac } from 'node:crypto';
import axios, { type AxiosInstance } from 'axios';
import { plainText } from '../core/index.ts';
import type { EventType, IndexbotEvent, WeightChange } from '../detect/index.ts';
import type { StrategyAlertRow } from '../store/index.ts';

/** Which events and strategy alerts reach a sink. */
export interface SinkFilter {
  /** @default the three rebalance event types */
  types?: EventType[];
  /** Applies to events and to strategy alerts (by the index of the event they answered). @default every index */
  indexes?: string[];
  /** Rebalance events whose largest weight change is smaller are skipped. @default 0 */
  minWeightChange?: number;
  /** `ctx.alert(...)` of every strategy (true), of none (false), or of those named. @default true */
  strategyAlerts?: boolean | string[];
}

/** One message owed to a sink: a detected event, a strategy's alert, or doctor's test. */
export interface Alert {
  /** Unique and stable: the `Idempotency-Key`, and the webhook body's `id`. */
  id: string;
  /** The line a person reads. */
  text: string;
  /** What a generic webhook receives besides `id` and `text`. */
  fields: { type: string } & Record<string, unknown>;
}

interface SinkBase {
  /** Unique among the sinks: names its cursor, outbox rows and log lines. */
  name: string;
  filter?: SinkFilter;
}

export type SinkConfig = SinkBase &
  (
    | { type: 'console' }
    | { type: 'webhook'; url: string /** HMAC-SHA256 of the body, sent as `X-Indexbot-Signature: sha256=<hex>`. */; secret?: string }
    | { type: 'slack'; url: string }
    | { type: 'discord'; url: string }
    | { type: 'telegram'; botToken: string; chatId: string | number /** @default https://api.telegram.org */; baseUrl?: string /** Answer commands from this chat. */; commands?: boolean }
  );

export const DEFAULT_ALERT_TYPES: EventType[] = ['rebalance.announced', 'rebalance.completed', 'rebalance.cancelled'];

export function matches(filter: SinkFilter | undefined, e: IndexbotEvent): boolean {
  if (!(filter?.types ?? DEFAULT_ALERT_TYPES).includes(e.type)) return false;
  if (filter?.indexes && !filter.indexes.includes(e.indexId)) return false;
  const min = filter?.minWeightChange ?? 0;
  if (min > 0 && 'changes' in e.payload) {
    const largest = Math.max(0, ...(e.payload.changes as WeightChange[]).map((c) => Math.abs(c.newWeight - c.oldWeight)));
    if (largest < min) return false;
  }
  return true;
}

export function matchesStrategyAlert(filter: SinkFilter | undefined, a: StrategyAlertRow): boolean {
  const wanted = filter?.strategyAlerts ?? true;
  if (wanted === false || (Array.isArray(wanted) && !wanted.includes(a.strategy))) return false;
  return !filter?.indexes || (a.indexId !== null && filter.indexes.includes(a.indexId));
}

/**
 * The names a sink's filter gives that nothing here will ever match: a strategy not loaded,
 * an index not followed. A misspelled one would silence the sink without a word (trial 28).
 * Either list undefined: not known here (a collector runs no strategy; doctor with `"indexes": "all"`), not checked.
 */
export function unmatchableFilterNames(sinks: readonly SinkConfig[], strategies: readonly string[] | undefined, indexes: readonly string[] | undefined): string[] {
  const unknown = (sink: SinkConfig, key: string, names: readonly string[], known: readonly string[] | undefined, what: string) =>
    known === undefined ? [] : names.filter((n) => !known.includes(n)).map((n) => `alert sink "${sink.name}": filter.${key} "${n}" is no ${what} (${known.join(', ') || 'none'})`);
  return sinks.flatMap((sink) => [
    ...unknown(sink, 'strategyAlerts', Array.isArray(sink.filter?.strategyAlerts) ? sink.filter.strategyAlerts : [], strategies, 'strategy this bot runs'),
    ...unknown(sink, 'indexes', sink.filter?.indexes ?? [], indexes, 'index this bot follows'),
  ]);
}

/** What a delivery attempt came to. `retryAfterMs` is the server's own wish (429 Retry-After). */
export type SendOutcome = { ok: true } | { ok: false; retry: boolean; reason: string; retryAfterMs?: number };

export interface Sender {
  send(sink: SinkConfig, alert: Alert): Promise<SendOutcome>;
}

/**
 * Posts alerts over HTTP. Error reasons name the status or the system error only: a sink's
 * URL or bot token is a credential and never goes into a reason or a log line.
 */
export class HttpSender implements Sender {
  private readonly http: AxiosInstance;

  constructor(
    private readonly timeoutMs = 10_000,
    private readonly write: (line: string) => void = (line) => process.stdout.write(line),
  ) {
    this.http = axios.create({ timeout: timeoutMs, validateStatus: () => true, maxRedirects: 0, responseType: 'text', transformResponse: (d: unknown) => d });
  }

  async send(sink: SinkConfig, alert: Alert): Promise<SendOutcome> {
    if (sink.type === 'console') {
      this.write(`[alert] ${plainText(alert.text)}\n`);
      return { ok: true };
    }
    const { url, body, headers } = request(sink, alert);
    try {
      const res = await this.http.post(url, body, { headers: { 'Content-Type': 'application/json', 'Idempotency-Key': alert.id, ...headers } });
      if (res.status >= 200 && res.status < 300) return { ok: true };
      const retryAfter = Number(res.headers['retry-after']);
      return {
        ok: false,
        retry: res.status === 429 || res.status >= 500 || res.status === 408,
        reason: `HTTP ${res.status}`,
        retryAfterMs: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 : undefined,
      };
    } catch (e) {
      const code = (e as { code?: string }).code ?? 'network error';
      return { ok: false, retry: true, reason: code === 'ECONNABORTED' ? `no answer within ${this.timeoutMs} ms` : code };
    }
  }
}

/**
 * The HTTP request of one alert to one sink, body as the exact bytes that are signed. The
 * text carries the server's strings (symbols, names), so each chat gets it as data: no
 * control characters, Slack's `& < >` escaped (no `<!channel>`, no forged `<url|label>`),
 * Discord's markdown escaped and its mentions off (no `@everyone`), Telegram without a parse mode.
 */
export function request(sink: Exclude<SinkConfig, { type: 'console' }>, alert: Alert): { url: string; body: string; headers: Record<string, string> } {
  const text = plainText(alert.text);
  switch (sink.type) {
    case 'webhook': {
      const body = JSON.stringify({ id: alert.id, ...alert.fields, text });
      const headers: Record<string, string> = {};
      if (sink.secret) headers['X-Indexbot-Signature'] = `sha256=${createHmac('sha256', sink.secret).update(body).digest('hex')}`;
      return { url: sink.url, body, headers };
    }
    case 'slack':
      return { url: sink.url, body: JSON.stringify({ text: slackEscaped(text) }), headers: {} };
    case 'discord':
      return { url: sink.url, body: JSON.stringify({ content: discordEscaped(text).slice(0, 2000), allowed_mentions: { parse: [] } }), headers: {} };
    case 'telegram':
      return {
        url: `${(sink.baseUrl ?? 'https://api.telegram.org').replace(/\/+$/, '')}/bot${sink.botToken}/sendMessage`,
        body: JSON.stringify({ chat_id: sink.chatId, text, disable_web_page_preview: true }),
        headers: {},
      };
  }
}

/** Slack's own escaping: the three characters its message format gives meaning to. */
const slackEscaped = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Discord markdown's characters, backslash-escaped: shown as typed, never as a masked link or formatting. */
const discordEscaped = (s: string) => s.replace(/[\\*_~`|[\]()<>#@]/g, '\\$&');
