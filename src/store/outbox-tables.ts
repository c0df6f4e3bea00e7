import type Database from 'better-sqlite3';

export interface OutboxRow {
  sink: string;
  /** The idempotency key: the event id, or the strategy alert's key. */
  eventId: string;
  /** The event's seq; for a strategy alert, the seq of the event its handler ran for. */
  seq: number;
  /** Set when the row carries a strategy's alert rather than an event. */
  strategyAlertId: number | null;
  attempts: number;
  nextAttemptAt: number;
  createdAt: number;
  /** Why the last attempt failed. */
  lastError: string | null;
}

export interface OutboxSummary {
  sink: string;
  pending: number;
  delivered: number;
  givenUp: number;
  oldestPendingAt: number | null;
  /** Why the latest failed attempt of an alert still pending failed. */
  lastError: string | null;
  /** Why the alert given up last was given up (trial 35: a later 500, retried, was shown as the give-ups' reason). */
  lastGiveUpError: string | null;
}

/** The alert outbox, on the store's connection: enqueued inside the store's transactions. */
export class OutboxTables {
  private readonly s: ReturnType<typeof prepare>;

  constructor(db: Database.Database) {
    this.s = prepare(db);
  }

  enqueue(sink: string, eventId: string, seq: number, now: number, strategyAlertId: number | null = null): void {
    this.s.enqueue.run(sink, eventId, seq, now, now, strategyAlertId);
  }

  /** The first pending rows of a sink's queue, in the order they are to be sent. */
  pending(sink: string, limit = 50): OutboxRow[] {
    return (
      this.s.pending.all(sink, limit) as {
        sink: string;
        event_id: string;
        seq: number;
        strategy_alert_id: number | null;
        attempts: number;
        next_attempt_at: number;
        created_at: number;
        last_error: string | null;
      }[]
    ).map((r) => ({
      sink: r.sink,
      eventId: r.event_id,
      seq: r.seq,
      strategyAlertId: r.strategy_alert_id,
      attempts: r.attempts,
      nextAttemptAt: r.next_attempt_at,
      createdAt: r.created_at,
      lastError: r.last_error,
    }));
  }

  /** Drops a sink's whole queue, what it still owed and what it delivered: the sink is gone from the config. Returns how many were still owed. */
  forgetSink(sink: string): number {
    const owed = (this.s.owed.get(sink) as { n: number }).n;
    this.s.forget.run(sink);
    return owed;
  }

  /** When the head of the sink's queue is due, if it has one. */
  nextDue(sink: string): number | undefined {
    return (this.s.head.get(sink) as { at: number } | undefined)?.at;
  }

  delivered(sink: string, eventId: string, now: number): void {
    this.s.finish.run('delivered', now, null, sink, eventId);
  }

  givenUp(sink: string, eventId: string, now: number, error: string): void {
    this.s.finish.run('given_up', now, error, sink, eventId);
  }

  retryAt(sink: string, eventId: string, at: number, error: string): void {
    this.s.retry.run(at, error, sink, eventId);
  }

  summary(): OutboxSummary[] {
    return (this.s.summary.all() as Record<string, unknown>[]).map((r) => ({
      sink: r.sink as string,
      pending: r.pending as number,
      delivered: r.delivered as number,
      givenUp: r.given_up as number,
      oldestPendingAt: r.oldest_pending_at as number | null,
      lastError: r.last_error as string | null,
      lastGiveUpError: r.last_give_up_error as string | null,
    }));
  }
}

function prepare(db: Database.Database) {
  return {
    enqueue: db.prepare("INSERT OR IGNORE INTO alert_outbox (sink, event_id, seq, status, next_attempt_at, created_at, strategy_alert_id) VALUES (?, ?, ?, 'pending', ?, ?, ?)"),
    // An event before the strategy alerts its handlers raised (NULLs sort first).
    pending: db.prepare("SELECT * FROM alert_outbox WHERE sink = ? AND status = 'pending' ORDER BY seq, strategy_alert_id LIMIT ?"),
    head: db.prepare("SELECT next_attempt_at AS at FROM alert_outbox WHERE sink = ? AND status = 'pending' ORDER BY seq, strategy_alert_id LIMIT 1"),
    finish: db.prepare('UPDATE alert_outbox SET status = ?, finished_at = ?, last_error = COALESCE(?, last_error), attempts = attempts + 1 WHERE sink = ? AND event_id = ?'),
    retry: db.prepare('UPDATE alert_outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE sink = ? AND event_id = ?'),
    owed: db.prepare("SELECT COUNT(*) AS n FROM alert_outbox WHERE sink = ? AND status = 'pending'"),
    forget: db.prepare('DELETE FROM alert_outbox WHERE sink = ?'),
    // The last error of what is still pending or was given up: a delivery the sink took in the end is over its failures.
    summary: db.prepare(
      `SELECT sink,
         SUM(status = 'pending') AS pending, SUM(status = 'delivered') AS delivered, SUM(status = 'given_up') AS given_up,
         MIN(CASE WHEN status = 'pending' THEN created_at END) AS oldest_pending_at,
         (SELECT last_error FROM alert_outbox o WHERE o.sink = a.sink AND o.status = 'pending' AND o.last_error IS NOT NULL ORDER BY o.next_attempt_at DESC LIMIT 1) AS last_error,
         (SELECT last_error FROM alert_outbox o WHERE o.sink = a.sink AND o.status = 'given_up' ORDER BY o.finished_at DESC LIMIT 1) AS last_give_up_error
       FROM alert_outbox a GROUP BY sink ORDER BY sink`,
    ),
  };
}
