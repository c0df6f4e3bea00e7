import type { ServerResponse } from 'node:http';
import type { IndexbotEvent } from '../detect/index.ts';
import type { Fill } from '../strategy/index.ts';

/** A client whose socket holds more than this unsent is too slow to follow: it is dropped, never waited for. */
const MAX_BUFFERED_BYTES = 1 << 20;
const HEARTBEAT_MS = 15_000;

/** The stream's response headers: what a GET gets before its events, and all a HEAD gets. */
export const STREAM_HEADERS = { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' } as const;

/**
 * Server-Sent Events to any number of clients. A message is serialized once and written to
 * each socket without waiting; a client that stops reading is disconnected once its buffer
 * passes 1 MiB, so no client can hold up the daemon or grow its memory. Events carry their
 * seq as the SSE id: a client that reconnects with `Last-Event-ID` (or `?since=`) gets all
 * it missed first.
 */
export class EventStream {
  private readonly clients = new Map<ServerResponse, Client>();
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;

  constructor() {
    this.heartbeat = setInterval(() => this.broadcast(': keep-alive\n\n'), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  get size(): number {
    return this.clients.size;
  }

  /**
   * Takes over `res` as a stream. With `since`, it first sends every event after that seq,
   * read from the log a page at a time at the pace the client takes them (a client away for a
   * day gets the whole day, not only a page of it), and joins the live events once a read
   * finds no more; no event reaches it twice.
   */
  attach(res: ServerResponse, since: number | undefined, read: (after: number) => IndexbotEvent[]): void {
    res.writeHead(200, STREAM_HEADERS);
    res.socket?.setNoDelay(true);
    res.write('retry: 2000\n\n');
    const client: Client = { lastSeq: since ?? 0 };
    res.on('close', () => this.clients.delete(res));
    if (since === undefined) this.clients.set(res, client);
    else
      this.catchUp(res, client, read).catch(() => {
        // The log could not be read (busy, or closing): the client reconnects with its Last-Event-ID.
        res.destroy();
      });
  }

  private async catchUp(res: ServerResponse, client: Client, read: (after: number) => IndexbotEvent[]): Promise<void> {
    for (;;) {
      if (res.destroyed || this.closed) return;
      const page = read(client.lastSeq);
      // Joined in the tick of the read that found nothing more: an event logged after it is broadcast to it.
      if (page.length === 0) break;
      let flowing = true;
      for (const e of page) {
        flowing = res.write(eventMessage(e));
        client.lastSeq = e.seq;
      }
      if (!flowing) await drainedOrClosed(res);
    }
    this.clients.set(res, client);
  }

  events(events: readonly IndexbotEvent[]): void {
    for (const e of events) this.broadcast(eventMessage(e), e.seq);
  }

  /** `label` names the instrument for people (a token's symbol). */
  fill(strategy: string, fill: Fill, label: string): void {
    this.broadcast(`event: fill\ndata: ${JSON.stringify({ strategy, label, ...fill })}\n\n`);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const res of this.clients.keys()) res.destroy();
    this.clients.clear();
  }

  /** `seq`: an event's, which a client that already has it (sent while it caught up) is not sent again. */
  private broadcast(message: string, seq?: number): void {
    for (const [res, client] of this.clients) {
      if (res.writableLength > MAX_BUFFERED_BYTES) {
        res.destroy();
        this.clients.delete(res);
        continue;
      }
      if (seq !== undefined) {
        if (seq <= client.lastSeq) continue;
        client.lastSeq = seq;
      }
      res.write(message);
    }
  }
}

interface Client {
  /** The seq of the last event it was sent. */
  lastSeq: number;
}

function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function eventMessage(e: IndexbotEvent): string {
  return `id: ${e.seq}\nevent: event\ndata: ${JSON.stringify(e)}\n\n`;
}
