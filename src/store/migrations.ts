import type Database from 'better-sqlite3';
import { decimal, quantity, toText, usd } from '../core/index.ts';

/**
 * Schema versions, applied in order at open and recorded in `PRAGMA user_version`.
 * A released migration is never edited: a change is a new entry.
 */
export const MIGRATIONS: { version: number; sql: string }[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE indexes (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        status TEXT,
        listed INTEGER NOT NULL DEFAULT 1,
        record TEXT NOT NULL,
        first_seen_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE snapshots (
        id INTEGER PRIMARY KEY,
        endpoint TEXT NOT NULL,
        index_id TEXT,
        fetched_at INTEGER NOT NULL,
        as_of INTEGER,
        hash TEXT NOT NULL,
        raw BLOB NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('accepted', 'rejected')),
        error TEXT
      );
      CREATE INDEX snapshots_by_endpoint ON snapshots (endpoint, index_id, id);
      CREATE INDEX snapshots_by_time ON snapshots (endpoint, index_id, as_of);
      -- Addresses are 44 characters; rows refer to them by a small integer.
      CREATE TABLE token_ids (
        id INTEGER PRIMARY KEY,
        address TEXT NOT NULL UNIQUE,
        symbol TEXT NOT NULL
      );
      CREATE TABLE composition_rows (
        snapshot_id INTEGER NOT NULL REFERENCES snapshots (id) ON DELETE CASCADE,
        token_id INTEGER NOT NULL REFERENCES token_ids (id),
        weight REAL NOT NULL,
        target_weight REAL NOT NULL,
        price_usd REAL NOT NULL,
        units REAL,
        PRIMARY KEY (snapshot_id, token_id)
      ) WITHOUT ROWID;
      CREATE TABLE performance_points (
        index_id TEXT NOT NULL,
        as_of INTEGER NOT NULL,
        nav REAL NOT NULL,
        returns TEXT NOT NULL,
        snapshot_id INTEGER REFERENCES snapshots (id) ON DELETE SET NULL,
        PRIMARY KEY (index_id, as_of)
      );
      CREATE TABLE history_points (
        index_id TEXT NOT NULL,
        interval TEXT NOT NULL,
        ts INTEGER NOT NULL,
        nav REAL NOT NULL,
        PRIMARY KEY (index_id, interval, ts)
      );
      CREATE TABLE history_prices (
        index_id TEXT NOT NULL,
        interval TEXT NOT NULL,
        ts INTEGER NOT NULL,
        address TEXT NOT NULL,
        symbol TEXT NOT NULL,
        price_usd REAL NOT NULL,
        weight REAL NOT NULL,
        PRIMARY KEY (index_id, interval, ts, address)
      );
      CREATE TABLE rebalances (
        id TEXT PRIMARY KEY,
        index_id TEXT NOT NULL,
        status TEXT NOT NULL,
        announced_at INTEGER NOT NULL,
        effective_at INTEGER NOT NULL,
        completed_at INTEGER,
        record TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX rebalances_by_index ON rebalances (index_id, announced_at);
      CREATE TABLE rebalance_status_changes (
        rebalance_id TEXT NOT NULL REFERENCES rebalances (id) ON DELETE CASCADE,
        status TEXT NOT NULL,
        observed_at INTEGER NOT NULL,
        PRIMARY KEY (rebalance_id, status)
      );
      CREATE TABLE tokens (
        address TEXT PRIMARY KEY,
        symbol TEXT NOT NULL,
        price_usd REAL NOT NULL,
        record TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        type TEXT NOT NULL,
        index_id TEXT NOT NULL,
        occurred_at INTEGER NOT NULL,
        detected_at INTEGER NOT NULL,
        payload TEXT NOT NULL
      );
      CREATE TABLE cursors (
        consumer TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE auth_tokens (
        base_url TEXT PRIMARY KEY,
        wallet TEXT NOT NULL,
        access_token TEXT NOT NULL,
        refresh_token TEXT NOT NULL,
        access_expires_at INTEGER NOT NULL,
        refresh_expires_at INTEGER
      );
      CREATE TABLE poll_jobs (
        job TEXT PRIMARY KEY,
        last_run_at INTEGER,
        last_success_at INTEGER,
        last_error TEXT,
        consecutive_failures INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE detector_state (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
    `,
  },
  {
    // What the running daemon reports for `indexbot status`: the budget plan and the rate gates.
    version: 2,
    sql: `
      CREATE TABLE runtime (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX events_by_type ON events (type);
    `,
  },
  {
    // Strategies: their key-value state, paper accounts, fills, alerts and parked events.
    version: 3,
    sql: `
      CREATE TABLE strategy_state (
        strategy TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (strategy, key)
      );
      CREATE TABLE paper_accounts (
        account TEXT PRIMARY KEY,
        initial_cash REAL NOT NULL,
        cash REAL NOT NULL
      );
      CREATE TABLE paper_positions (
        account TEXT NOT NULL REFERENCES paper_accounts (account),
        instrument TEXT NOT NULL,
        quantity REAL NOT NULL,
        cost_usd REAL NOT NULL,
        PRIMARY KEY (account, instrument)
      );
      CREATE TABLE paper_fills (
        id INTEGER PRIMARY KEY,
        account TEXT NOT NULL REFERENCES paper_accounts (account),
        event_id TEXT,
        instrument TEXT NOT NULL,
        side TEXT NOT NULL CHECK (side IN ('buy', 'sell')),
        quantity REAL NOT NULL,
        price REAL NOT NULL,
        fee_usd REAL NOT NULL,
        at INTEGER NOT NULL
      );
      CREATE TABLE strategy_alerts (
        id INTEGER PRIMARY KEY,
        strategy TEXT NOT NULL,
        event_id TEXT,
        message TEXT NOT NULL,
        data TEXT,
        at INTEGER NOT NULL
      );
      CREATE TABLE parked_events (
        strategy TEXT NOT NULL,
        seq INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        error TEXT NOT NULL,
        parked_at INTEGER NOT NULL,
        PRIMARY KEY (strategy, seq)
      );
    `,
  },
  {
    // Backfilled history (nothing wrote the v1 tables): one row per point with its
    // constituents packed, so a year of hourly points for 10 indexes is 87,600 rows, not 1.2
    // million; rows clustered by time, the backtest's replay order; and the ranges held.
    version: 4,
    sql: `
      DROP TABLE history_prices;
      DROP TABLE history_points;
      CREATE TABLE history_points (
        interval TEXT NOT NULL,
        ts INTEGER NOT NULL,
        index_id TEXT NOT NULL,
        nav REAL NOT NULL,
        constituents BLOB,
        PRIMARY KEY (interval, ts, index_id)
      ) WITHOUT ROWID;
      CREATE INDEX history_by_index ON history_points (index_id, interval, ts);
      CREATE TABLE backfill_coverage (
        dataset TEXT NOT NULL,
        index_id TEXT NOT NULL,
        from_ts INTEGER NOT NULL,
        to_ts INTEGER NOT NULL,
        PRIMARY KEY (dataset, index_id, from_ts)
      );
    `,
  },
  {
    // The alert outbox: one row per event and sink, written with the sink's cursor move, so an
    // alert is owed from the moment it is queued until its delivery is recorded.
    version: 5,
    sql: `
      CREATE TABLE alert_outbox (
        sink TEXT NOT NULL,
        event_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'given_up')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        last_error TEXT,
        created_at INTEGER NOT NULL,
        finished_at INTEGER,
        PRIMARY KEY (sink, event_id)
      );
      CREATE INDEX alert_outbox_due ON alert_outbox (sink, status, next_attempt_at);
    `,
  },
  {
    // Strategies' own alerts go through the outbox too; their rows name the alert they carry.
    // Each sink sends strictly in order, so its queue is read by position, not by due time.
    version: 6,
    sql: `
      ALTER TABLE alert_outbox ADD COLUMN strategy_alert_id INTEGER REFERENCES strategy_alerts (id);
      DROP INDEX alert_outbox_due;
      CREATE INDEX alert_outbox_queue ON alert_outbox (sink, status, seq, strategy_alert_id);
    `,
  },
  {
    // A token's latest price without scanning every composition snapshot (200 ms at 30 days
    // of eight indexes polled each minute; the paper broker asks on every order).
    version: 7,
    sql: `
      CREATE INDEX composition_rows_by_token ON composition_rows (token_id, snapshot_id);
    `,
  },
  {
    // That index made storing a composition 4x slower (every row a random insert into it);
    // the latest price is found from each index's latest snapshot instead.
    version: 8,
    sql: `
      DROP INDEX composition_rows_by_token;
    `,
  },
  {
    // A collector publishes its accepted snapshots between the events of its stream: each one
    // sits after the last event seq its transaction found (the event log's AUTOINCREMENT top,
    // which pruning never lowers). The latest snapshot per endpoint and index of an existing
    // cache is published once, after every event it holds.
    version: 9,
    sql: `
      ALTER TABLE snapshots ADD COLUMN after_seq INTEGER;
      UPDATE snapshots SET after_seq = COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0)
       WHERE id IN (SELECT MAX(id) FROM snapshots WHERE status = 'accepted' GROUP BY endpoint, index_id);
    `,
  },
  {
    // The paper ledger exact: cash, quantities, costs, fees and prices as decimal text (a REAL
    // column would turn the text back into a double). Old amounts are taken at their shortest
    // decimal form and rounded by the ledger's rules (core/money.ts); a position that rounds
    // to no units is closed. Tables renamed first so their foreign keys follow, children
    // dropped before their parent.
    version: 10,
    sql: `
      ALTER TABLE paper_fills RENAME TO paper_fills_real;
      ALTER TABLE paper_positions RENAME TO paper_positions_real;
      ALTER TABLE paper_accounts RENAME TO paper_accounts_real;
      CREATE TABLE paper_accounts (
        account TEXT PRIMARY KEY,
        initial_cash TEXT NOT NULL,
        cash TEXT NOT NULL
      );
      CREATE TABLE paper_positions (
        account TEXT NOT NULL REFERENCES paper_accounts (account),
        instrument TEXT NOT NULL,
        quantity TEXT NOT NULL,
        cost_usd TEXT NOT NULL,
        PRIMARY KEY (account, instrument)
      );
      CREATE TABLE paper_fills (
        id INTEGER PRIMARY KEY,
        account TEXT NOT NULL REFERENCES paper_accounts (account),
        event_id TEXT,
        instrument TEXT NOT NULL,
        side TEXT NOT NULL CHECK (side IN ('buy', 'sell')),
        quantity TEXT NOT NULL,
        price TEXT NOT NULL,
        fee_usd TEXT NOT NULL,
        at INTEGER NOT NULL
      );
      INSERT INTO paper_accounts SELECT account, ledger_usd(initial_cash), ledger_usd(cash) FROM paper_accounts_real;
      INSERT INTO paper_positions
        SELECT account, instrument, ledger_quantity(quantity), ledger_usd(cost_usd) FROM paper_positions_real WHERE ledger_quantity(quantity) <> '0';
      INSERT INTO paper_fills
        SELECT id, account, event_id, instrument, side, ledger_quantity(quantity), ledger_price(price), ledger_usd(fee_usd), at FROM paper_fills_real;
      DROP TABLE paper_fills_real;
      DROP TABLE paper_positions_real;
      DROP TABLE paper_accounts_real;
    `,
  },
  {
    // Rebalancing statuses dated as snapshot-store.ts statusTimes dates them now: by the
    // record's own times, never later than they were seen. A poll dated each status by its own
    // time, so a record a first poll found finished (the daemon run before backfill) replayed
    // its end at that poll, after every backtest's range, and a later backfill could not
    // correct it. A record first seen finished is given its announcement too.
    version: 11,
    sql: `
      INSERT OR IGNORE INTO rebalance_status_changes (rebalance_id, status, observed_at)
        SELECT r.id, 'announced', MIN(r.announced_at, COALESCE((SELECT MIN(c.observed_at) FROM rebalance_status_changes c WHERE c.rebalance_id = r.id), r.announced_at))
        FROM rebalances r;
      UPDATE rebalance_status_changes SET observed_at = MIN(observed_at, COALESCE((
        SELECT CASE rebalance_status_changes.status
                 WHEN 'announced' THEN r.announced_at
                 WHEN 'completed' THEN COALESCE(r.completed_at, r.effective_at)
                 WHEN 'cancelled' THEN r.effective_at
               END
        FROM rebalances r WHERE r.id = rebalance_status_changes.rebalance_id), observed_at));
    `,
  },
];

/** SQL functions the migrations call: the ledger's rounding rules, for converting REAL amounts. */
export function registerMigrationFunctions(db: Database.Database): void {
  const fn = (name: string, convert: (value: number) => string) => db.function(name, { deterministic: true }, (value) => convert(value as number));
  fn('ledger_usd', (v) => toText(usd(decimal(v))));
  fn('ledger_quantity', (v) => toText(quantity(decimal(v))));
  fn('ledger_price', (v) => toText(decimal(v)));
}

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;
