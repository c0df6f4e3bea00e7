import type { SnapshotStore } from '../store/index.ts';

/** Where a runner's store keeps its last answered read of the event stream (`status` reads it). */
export const STREAM_HEARTBEAT = 'eventStreamRead';

/** A runner's last answered read: its group's lag (entries not yet delivered to it; Redis 7+) and pending (delivered, not acknowledged). */
export interface StreamHeartbeat {
  stream: string;
  group: string;
  lag: number | null;
  pending: number | null;
  /** The runner's process: status says when it no longer runs (its lag is then its last). */
  pid?: number;
}

/** A runner's read is answered every second or so: one older than this (s) is no longer its present. */
export const STALE_READ_S = 15;

/** Where a runner's store counts the events it never got: the stream had lost them (Redis restarted empty, trimmed) before it read that far. */
export const STREAM_MISSED = 'eventStreamMissed';

export interface StreamMissed {
  /** Events missed since this database began. */
  events: number;
  /** The last run of them, by the collector's seq, and when it was found. */
  last: { from: number; to: number; at: number };
}

/**
 * When this database's bot last heard from its source, as `status --check` and /readyz judge
 * it: its last successful poll (a daemon, a collector) or, for a runner, which polls nothing,
 * its last answered read of the event stream.
 */
export function lastHeartbeat(store: SnapshotStore): { at: number; source: 'poll' | 'stream' } | null {
  const lastPoll = Math.max(0, ...store.jobStates().map((j) => j.lastSuccessAt ?? 0));
  if (lastPoll > 0) return { at: lastPoll, source: 'poll' };
  const read = store.runtime<StreamHeartbeat>(STREAM_HEARTBEAT);
  return read ? { at: read.updatedAt, source: 'stream' } : null;
}
