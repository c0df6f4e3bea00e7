import type { SinkConfig } from '../alerts/index.ts';
import { type Clock, type Logger, StrategyError, checkOptionRange, eitherSignal, sleep, systemClock } from '../core/index.ts';
import type { BotControl } from './server.ts';

type TelegramSink = Extract<SinkConfig, { type: 'telegram' }>;

export interface TelegramCommandsOptions {
  sink: TelegramSink;
  control: BotControl;
  logger: Logger;
  /** Seconds one `getUpdates` long poll waits for a message. @default 25 */
  pollTimeoutS?: number;
  /** Wait after a failed `getUpdates`. @default 5000 */
  retryMs?: number;
  /**
   * Least time from one `getUpdates` to the next when it found nothing: a server that answers
   * at once instead of holding the long poll (a proxy, a mock) is not asked again at once, for ever. @default 1000
   */
  minEmptyPollMs?: number;
  /** @default systemClock */
  clock?: Clock;
}

interface Update {
  update_id: number;
  message?: { chat?: { id?: number | string }; text?: string };
}

const HELP = 'commands: /status, /strategies, /pause NAME, /resume NAME, /parked, /retry NAME';

/**
 * Answers commands sent to the telegram sink's bot, from that sink's chat only: anything from
 * another chat is ignored and logged. Long-polls `getUpdates`; the offset is kept in the store,
 * so a restart neither repeats nor loses a command. The bot token is part of every URL, so no
 * URL and no raw fetch error is ever logged.
 */
export class TelegramCommands {
  private readonly base: string;
  private readonly offsetKey: string;
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;

  constructor(private readonly o: TelegramCommandsOptions) {
    this.base = `${(o.sink.baseUrl ?? 'https://api.telegram.org').replace(/\/+$/, '')}/bot${o.sink.botToken}`;
    this.offsetKey = `telegramOffset:${o.sink.name}`;
    checkOptionRange('pollTimeoutS', o.pollTimeoutS, { min: 0, max: 50 });
    checkOptionRange('retryMs', o.retryMs, { min: 0, max: 600_000 });
    checkOptionRange('minEmptyPollMs', o.minEmptyPollMs, { min: 0, max: 60_000 });
  }

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  private async loop(): Promise<void> {
    const { store } = this.o.control;
    const clock = this.o.clock ?? systemClock;
    let offset = store.runtime<number>(this.offsetKey)?.value ?? 0;
    while (!this.abort.signal.aborted) {
      let updates: Update[];
      const asked = clock.now();
      try {
        updates = await this.call<Update[]>('getUpdates', { offset, timeout: this.o.pollTimeoutS ?? 25, allowed_updates: ['message'] });
      } catch (e) {
        if (this.abort.signal.aborted) return;
        this.o.logger.warn({ sink: this.o.sink.name, error: describe(e) }, 'telegram getUpdates failed; retrying');
        await this.wait(this.o.retryMs ?? 5_000);
        continue;
      }
      // Trial 30: a server answering empty at once was asked 120,000 times in 65 s, the daemon at 90 % CPU.
      if (updates.length === 0) await this.wait((this.o.minEmptyPollMs ?? 1_000) - (clock.now() - asked));
      for (const u of updates) {
        offset = Math.max(offset, u.update_id + 1);
        await this.onUpdate(u);
      }
      if (updates.length > 0) store.setRuntime(this.offsetKey, offset, Date.now());
    }
  }

  /** Resolves after `ms` on the clock, or at once when stopped. */
  private wait(ms: number): Promise<void> {
    return ms <= 0 ? Promise.resolve() : sleep(this.o.clock ?? systemClock, ms, this.abort.signal).catch(() => undefined);
  }

  private async onUpdate(u: Update): Promise<void> {
    const chat = u.message?.chat?.id;
    const text = u.message?.text?.trim();
    if (chat === undefined || !text?.startsWith('/')) return;
    const [head = '', ...args] = text.split(/\s+/);
    const command = head.replace(/@.*$/, '').toLowerCase();
    if (String(chat) !== String(this.o.sink.chatId)) {
      this.o.logger.warn({ sink: this.o.sink.name, chatId: String(chat), command: command.slice(0, 32) }, 'telegram command from another chat ignored');
      return;
    }
    let reply: string;
    try {
      reply = await this.answer(command, args);
    } catch (e) {
      reply = e instanceof StrategyError ? e.message : 'that failed; see the bot log';
      if (!(e instanceof StrategyError)) this.o.logger.error({ sink: this.o.sink.name, command, error: describe(e) }, 'telegram command failed');
    }
    // Its argument too (a strategy's name, bounded): who paused what is read from the log (trial 35).
    this.o.logger.info({ sink: this.o.sink.name, command, args: args.slice(0, 2).map((a) => a.slice(0, 64)) }, 'telegram command');
    try {
      await this.call('sendMessage', { chat_id: this.o.sink.chatId, text: reply, disable_web_page_preview: true });
    } catch (e) {
      this.o.logger.warn({ sink: this.o.sink.name, error: describe(e) }, 'telegram reply failed');
    }
  }

  private async answer(command: string, args: string[]): Promise<string> {
    const c = this.o.control;
    const name = args[0];
    const needName = (verb: string) => {
      if (!name) throw new StrategyError(`usage: /${verb} NAME (running: ${c.strategies.names.join(', ') || 'none'})`, 'STRATEGY_UNKNOWN');
      return name;
    };
    switch (command) {
      case '/status': {
        const s = c.status();
        const beat = s.heartbeat ? `last successful poll ${s.heartbeat.ageS} s ago` : 'no successful poll yet';
        const failing = s.jobs.filter((j) => j.consecutiveFailures > 0).map((j) => j.job);
        const pending = s.alerts.reduce((n, a) => n + a.pending, 0);
        return [
          `indexbot: ${beat}`,
          `${c.indexes.length} indexes, ${c.strategies.names.length} strategies (${c.strategies.paused().length} paused), ${pending} alerts pending`,
          failing.length > 0 ? `failing: ${failing.join(', ')}` : 'no poll failing',
        ].join('\n');
      }
      case '/strategies': {
        const paused = new Set(c.strategies.paused());
        const lines = c
          .strategyBooks()
          .filter((s) => c.strategies.names.includes(s.strategy))
          .map((s) => `${s.strategy}${paused.has(s.strategy) ? ' (paused)' : ''}: equity ${s.equity.toFixed(2)}, P&L ${s.pnlUsd.toFixed(2)} USD, ${s.positions.length} positions, ${s.parked} parked`);
        return lines.join('\n') || 'no strategies';
      }
      case '/pause':
        return c.strategies.pause(needName('pause')) ? `${name} paused: its events wait` : `${name} was paused already`;
      case '/resume':
        return c.strategies.resume(needName('resume')) ? `${name} resumed` : `${name} was not paused`;
      case '/parked': {
        const parked = c.store.strategies.parked();
        if (parked.length === 0) return 'no parked events';
        return parked
          .slice(0, 20)
          .map((p) => `${p.strategy}: ${p.eventId} (${p.error.slice(0, 80)})`)
          .join('\n');
      }
      case '/retry': {
        const n = needName('retry');
        if (!c.strategies.names.includes(n)) throw new StrategyError(`no strategy named "${n}" is running`, 'STRATEGY_UNKNOWN');
        return `${n}: ${await c.strategies.retryParked(n)} parked events delivered`;
      }
      default:
        return HELP;
    }
  }

  private async call<T = unknown>(method: string, body: unknown): Promise<T> {
    const timeoutMs = ((this.o.pollTimeoutS ?? 25) + 10) * 1000;
    const ended = eitherSignal(this.abort.signal, AbortSignal.timeout(timeoutMs));
    let res: Response;
    let parsed: { ok?: boolean; result?: T; description?: string } | undefined;
    try {
      res = await fetch(`${this.base}/${method}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal: ended.signal });
      parsed = (await res.json().catch(() => undefined)) as typeof parsed;
    } finally {
      ended.done();
    }
    if (!res.ok || !parsed?.ok) throw new Error(`${method}: HTTP ${res.status}${parsed?.description ? ` ${parsed.description.slice(0, 200)}` : ''}`);
    return parsed.result as T;
  }
}

/** A fetch failure's cause code or our own message, never the URL (it holds the bot token). */
function describe(e: unknown): string {
  const cause = (e as { cause?: { code?: string } }).cause?.code;
  if (cause) return cause;
  if (e instanceof Error && e.name === 'TimeoutError') return 'timeout';
  return e instanceof Error && /^(getUpdates|sendMessage):/.test(e.message) ? e.message : 'request failed';
}
