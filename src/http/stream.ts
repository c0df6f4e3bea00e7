import type { ServerResponse } from 'node:http';
import type { IndexbotEvent } from '../detect/index.ts';
import type { Fill } from '../strategy/index.ts';

/** A client whose socket holds more than this unsent is too slow to follow: it is dropped, never waited for. */
const MAX_BUFFERED_BYTES = 1 << 20;
const HEARTBEAT_MS = 15_000;

/**
 * Server-Sent Events to any number of clients. A message is serialized once and written to
 * each socket without waiting; a client that stops reading is disconnected once its buffer
 * passes 1 MiB, so no client can hold up the daemon or grow its memory. Events carry their
 * seq as the SSE id: a client that reconnects with `Last-Event-ID` (or `?since=`) gets what
 * it missed first.
 */
export class EventStream {
  private readonly clients = new Set<ServerResponse>();
  private readonly heartbeat: NodeJS.Timeout;

  constructor() {
    this.heartbeat = setInterval(() => this.broadcast(': keep-alive\n\n'), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  get size(): number {
    return this.clients.size;
  }

  /** Takes over `res` as a stream, after sending `backlog` (events the client missed). */
  attach(res: ServerResponse, backlog: IndexbotEvent[]): void {
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
    res.socket?.setNoDelay(true);
    res.write('retry: 2000\n\n');
    for (const e of backlog) res.write(eventMessage(e));
    this.clients.add(res);
    res.on('close', () => this.clients.delete(res));
  }

  events(events: readonly IndexbotEvent[]): void {
    for (const e of events) this.broadcast(eventMessage(e));
  }

  /** `label` names the instrument for people (a token's symbol). */
  fill(strategy: string, fill: Fill, label: string): void {
    this.broadcast(`event: fill\ndata: ${JSON.stringify({ strategy, label, ...fill })}\n\n`);
  }

  close(): void {
    clearInterval(this.heartbeat);
    for (const res of this.clients) res.destroy();
    this.clients.clear();
  }

  private broadcast(message: string): void {
    for (const res of this.clients) {
      if (res.writableLength > MAX_BUFFERED_BYTES) {
        res.destroy();
        this.clients.delete(res);
        continue;
      }
      res.write(message);
    }
  }
}

function eventMessage(e: IndexbotEvent): string {
  return `id: ${e.seq}\nevent: event\ndata: ${JSON.stringify(e)}\n\n`;
}
