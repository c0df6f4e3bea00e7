import Database from 'better-sqlite3';

/**
 * A private copy of a cache that can be cut back in time: what the cache would have held at
 * an earlier moment. The lookahead check replays a strategy on it, so that a strategy that
 * opens the cache file itself sees no more than the replay does.
 */
export class CacheCopy {
  private readonly db: Database.Database;

  private constructor(readonly path: string) {
    this.db = new Database(path);
    this.db.pragma('foreign_keys = ON');
  }

  /** Copies `source` (read-only) to `path`, which must not exist. */
  static create(source: string, path: string): CacheCopy {
    const src = new Database(source, { readonly: true, fileMustExist: true });
    try {
      src.prepare('VACUUM INTO ?').run(path);
    } finally {
      src.close();
    }
    return new CacheCopy(path);
  }

  /**
   * Deletes every fact dated after `t` and turns rebalancing records back to their status at
   * `t`. Cuts only move back: call it with decreasing times.
   */
  cutAfter(t: number): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM history_points WHERE ts > ?').run(t);
      this.db.prepare('DELETE FROM rebalance_status_changes WHERE observed_at > ?').run(t);
      this.db.prepare('DELETE FROM rebalances WHERE id NOT IN (SELECT rebalance_id FROM rebalance_status_changes)').run();
      this.db
        .prepare(
          `UPDATE rebalances SET
             status = (SELECT c.status FROM rebalance_status_changes c WHERE c.rebalance_id = rebalances.id ORDER BY c.observed_at DESC LIMIT 1),
             completed_at = CASE WHEN completed_at > @t THEN NULL ELSE completed_at END,
             record = json_set(record, '$.status', (SELECT c.status FROM rebalance_status_changes c WHERE c.rebalance_id = rebalances.id ORDER BY c.observed_at DESC LIMIT 1),
                                       '$.completed_at', CASE WHEN completed_at > @t THEN NULL ELSE json_extract(record, '$.completed_at') END)
           WHERE updated_at > @t OR completed_at > @t`,
        )
        .run({ t });
      this.db.prepare('DELETE FROM snapshots WHERE fetched_at > ?').run(t);
      this.db.prepare('DELETE FROM performance_points WHERE as_of > ?').run(t);
      this.db.prepare('DELETE FROM tokens WHERE updated_at > ?').run(t);
      this.db.prepare('DELETE FROM events WHERE detected_at > ?').run(t);
    })();
  }

  close(): void {
    this.db.close();
  }
}
