import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, existsSync, openSync } from 'node:fs';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { basename, dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { StoredTokens, TokenStore } from '../auth/index.ts';
import { type Composition, INTERVAL_MS, type IndexSummary, type Performance, type Rebalance, type Token } from '../contract/index.ts';
import { StoreError, StoreWriteError, WHY_NOT_WRITABLE, makeDirectories } from '../core/index.ts';
import type { EventType, IndexbotEvent, NewEvent } from '../detect/index.ts';
import { refuseNonFile } from './database-path.ts';
import { APPLICATION_ID, indexbotSchemaVersion } from './database-identity.ts';
import { MIGRATIONS, SCHEMA_VERSION, registerMigrationFunctions } from './migrations.ts';
import { HistoryTables, notBusy } from './history-tables.ts';
import { OutboxTables } from './outbox-tables.ts';
import { StrategyTables } from './strategy-tables.ts';
import { storeFailure } from './sqlite-errors.ts';

export interface SnapshotInput {
  endpoint: string;
  indexId: string | null;
  fetchedAt: number;
  /** The server's `as_of`, epoch ms, when the payload has one. */
  asOf: number | null;
  hash: string;
  /** The JSON text as received; stored deflated (compositions repeat their keys a hundred times). */
  raw: string;
  status: 'accepted' | 'rejected';
  error?: string;
}

/** An accepted snapshot as stored, with its place in the event log. */
export interface StoredSnapshot extends Omit<SnapshotInput, 'status' | 'error'> {
  id: number;
  /** The event log's last seq when it was stored. */
  afterSeq: number;
}

export interface JobState {
  job: string;
  lastRunAt: number | null;
  lastSuccessAt: number | null;
  lastError: string | null;
  consecutiveFailures: number;
}

export interface IndexCacheSummary {
  indexId: string;
  name: string | null;
  status: string | null;
  /** The server's `as_of` of the latest composition. */
  compositionAsOf: number | null;
  /** When we fetched it (our clock): the age of the cache. */
  compositionFetchedAt: number | null;
  compositionSnapshots: number;
  performancePoints: number;
  historyPoints: number;
  /** The first and last history point, over every interval (null without any). */
  historyFirst: number | null;
  historyLast: number | null;
  rebalances: number;
}

export interface HistorySpan {
  interval: string;
  points: number;
  first: number;
  last: number;
  missing: number;
}

export interface OpenStoreOptions {
  /** Open without writing (no migrations): for `status` while a daemon runs. */
  readonly?: boolean;
  /** @default 5000 */
  busyTimeoutMs?: number;
}

type Row = Record<string, unknown>;

const DATABASE_ID = 'database_id';

/**
 * When each status of a rebalancing record became true, for the replay and the queries cut
 * at a time: by the record's own times (announced_at; completed_at, or effective_at when it
 * has none), never later than `seenAt`, when a poll or a backfill saw it. A cancellation has
 * no time of its own: it is dated at the latest it can have happened (effective_at, or the
 * sighting if earlier), so a backtest never learns of it early. A completed or cancelled
 * record was announced first, even when the first sighting is of its end. Dated by the
 * sighting instead, a record a first poll found finished months ago replayed its end at
 * that poll, after every backtest's range.
 */
function statusTimes(r: Pick<Rebalance, 'status' | 'announced_at' | 'effective_at' | 'completed_at'>, seenAt: number): [status: string, at: number][] {
  const effectiveAt = Date.parse(r.effective_at);
  const times: [string, number][] = [['announced', Math.min(Date.parse(r.announced_at), seenAt)]];
  if (r.status === 'completed') times.push(['completed', Math.min(r.completed_at ? Date.parse(r.completed_at) : effectiveAt, seenAt)]);
  else if (r.status === 'cancelled') times.push(['cancelled', Math.min(effectiveAt, seenAt)]);
  // A status the contract does not name (the client is lenient): when it was first seen.
  else if (r.status !== 'announced') times.push([r.status, seenAt]);
  return times;
}

/**
 * The SQLite cache: one file, WAL, foreign keys on, migrations at open. All writes of one
 * poll happen inside `transaction()`, which is synchronous like better-sqlite3's: nothing
 * awaits inside it, so a crash leaves either all of a poll or none of it.
 */
export class SnapshotStore implements TokenStore {
  readonly path: string;
  /** Strategy state, paper accounts, fills, alerts and parked events. */
  readonly strategies: StrategyTables;
  /** Backfilled history points and the ranges held. */
  readonly history: HistoryTables;
  /** Alerts owed to each sink. */
  readonly outbox: OutboxTables;
  private readonly db: Database.Database;
  private readonly s: ReturnType<typeof prepare>;
  /** better-sqlite3 wraps a function in BEGIN/COMMIT; the wrapper is made once, not per call. */
  private readonly inTransaction: (fn: () => unknown) => unknown;
  /** Token id by address: every composition row needs one. */
  private readonly tokenIds = new Map<string, number>();
  /**
   * Addresses given an id inside the open transaction. `token_ids` reuses the id of a
   * rolled-back row, so on rollback these leave the cache: a kept one would point at a row
   * that never was, or at the next new token's.
   */
  private readonly uncommittedTokens: string[] = [];
  /** Write-through cache of detector state: read on every poll, changed rarely. */
  private readonly stateCache = new Map<string, { json: string; value: unknown }>();

  private constructor(path: string, db: Database.Database) {
    this.path = path;
    this.db = db;
    this.s = prepare(db);
    this.strategies = new StrategyTables(db);
    this.outbox = new OutboxTables(db);
    this.history = new HistoryTables(db, (address, symbol) => this.tokenId(address, symbol));
    // IMMEDIATE takes the write lock first: a deferred transaction that read and then found
    // another writer would fail at once (SQLite cannot wait there without risking deadlock)
    // instead of waiting out the busy timeout.
    const tx = db.transaction((fn: () => unknown) => fn());
    this.inTransaction = (fn) => tx.immediate(fn);
  }

  static open(path: string, options: OpenStoreOptions = {}): SnapshotStore {
    // What SQLite says of these ("unable to open database file", "disk I/O error") names neither cause.
    if (options.readonly && path !== ':memory:' && !existsSync(path)) {
      throw new StoreError(`no database at ${path}: fill one with \`indexbot backfill\` (or \`indexbot run\`), or pass --db`, 'STORE_UNAVAILABLE');
    }
    refuseNonFile(path);
    if (!options.readonly && path !== ':memory:') {
      try {
        makeDirectories(dirname(path));
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? '';
        throw new StoreError(`cannot create the directory of ${path}: ${WHY_NOT_WRITABLE[code] ?? (e as Error).message} (${code})`, 'STORE_UNAVAILABLE');
      }
    }
    // Made by us, readable by us alone: it holds a wallet's tokens after `login` (trial 32: 0644, as the umask made it). SQLite gives its -wal and -shm the same mode.
    if (!options.readonly && path !== ':memory:') {
      createPrivately(path);
      refuseReadOnlyFiles(path);
    }
    let db: Database.Database;
    try {
      db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false, timeout: options.busyTimeoutMs ?? 5_000 });
    } catch (e) {
      throw new StoreError(`cannot open database ${path}: ${(e as Error).message}`, 'STORE_UNAVAILABLE');
    }
    try {
      // Whose database it is, before anything is written to it.
      const version = path === ':memory:' ? 0 : indexbotSchemaVersion(path, db);
      if (version > SCHEMA_VERSION) {
        throw new StoreError(`database ${path} has schema version ${version}, newer than this indexbot knows (${SCHEMA_VERSION}); upgrade indexbot or use another --db`, 'STORE_SCHEMA_NEWER');
      }
      if (!options.readonly) {
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = NORMAL');
        db.pragma('foreign_keys = ON');
        migrate(db, version);
      } else if (version === 0) {
        throw new StoreError(`${path} holds no indexbot database (an empty file); fill one with \`indexbot backfill\`, or pass --db`, 'STORE_UNAVAILABLE');
      } else if (version < SCHEMA_VERSION) {
        throw new StoreError(`database ${path} has schema version ${version}; run \`indexbot run\` once to migrate it`, 'STORE_UNAVAILABLE');
      }
      return new SnapshotStore(path, db);
    } catch (e) {
      db.close();
      if (e instanceof StoreError) throw e;
      // A read-only open writes nothing, but SQLite must create the -shm file beside a WAL
      // database even to read it: in a directory it may not write, that is the failure.
      const code = (e as { code?: unknown }).code;
      if (options.readonly && typeof code === 'string' && (code.startsWith('SQLITE_READONLY') || code === 'SQLITE_CANTOPEN')) {
        throw new StoreError(
          `cannot read database ${path}: SQLite needs to create ${basename(path)}-shm in ${dirname(path)} even to read a database in WAL mode, and that directory is not writable (${code}); make it writable, or copy the database (with its -wal file) somewhere that is`,
          'STORE_UNAVAILABLE',
        );
      }
      if (code === 'SQLITE_NOTADB') throw new StoreError(`${path} is not a database file (not SQLite); pass --db an indexbot database, or a new path`, 'STORE_UNAVAILABLE');
      // A full disk or a lock held during migration passes: exit as temporary, to be restarted.
      const failure = storeFailure(e);
      if (failure instanceof StoreWriteError) throw failure;
      throw new StoreError(`cannot use database ${path}: ${(e as Error).message}`, 'STORE_UNAVAILABLE');
    }
  }

  get schemaVersion(): number {
    return this.db.pragma('user_version', { simple: true }) as number;
  }

  transaction<T>(fn: () => T): T {
    try {
      const result = this.inTransaction(fn) as T;
      if (!this.db.inTransaction) this.uncommittedTokens.length = 0;
      return result;
    } catch (e) {
      // A rolled-back transaction may have put into the caches what the file never got.
      // (A nested one rolls back only its savepoint, but dropping more than that costs only a lookup.)
      this.stateCache.clear();
      for (const address of this.uncommittedTokens) this.tokenIds.delete(address);
      if (!this.db.inTransaction) this.uncommittedTokens.length = 0;
      throw storeFailure(e);
    }
  }

  integrityCheck(): string {
    return this.db.pragma('integrity_check', { simple: true }) as string;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /** Nothing fetched or signed in yet: no snapshot, history point, event, backfill or token stored (a start refused before its first poll). */
  holdsNoData(): boolean {
    const empty = ['snapshots', 'history_points', 'events', 'backfill_coverage', 'auth_tokens'].map((t) => `NOT EXISTS (SELECT 1 FROM ${t})`).join(' AND ');
    return this.db.prepare(`SELECT ${empty}`).pluck().get() === 1;
  }

  // --- snapshots ---

  /** The hash of the last snapshot stored for this endpoint and index, to skip identical ones. */
  lastSnapshotHash(endpoint: string, indexId: string | null): string | undefined {
    return (this.s.lastHash.get(endpoint, indexId) as { hash: string } | undefined)?.hash;
  }

  insertSnapshot(input: SnapshotInput): number {
    const raw = deflateRawSync(input.raw, { level: 1 });
    return Number(this.s.insertSnapshot.run(input.endpoint, input.indexId, input.fetchedAt, input.asOf, input.hash, raw, input.status, input.error ?? null).lastInsertRowid);
  }

  /** The JSON text of a stored snapshot, as it was received. */
  snapshotRaw(id: number): string | undefined {
    const row = this.s.snapshotRaw.get(id) as { raw: Buffer } | undefined;
    return row ? inflateRawSync(row.raw).toString('utf8') : undefined;
  }

  /**
   * Accepted snapshots after `id`, in the order they were stored, each with `afterSeq`: the
   * last event seq stored before it (its own events, if it had any, come after it).
   */
  acceptedSnapshotsAfter(id: number, limit: number): StoredSnapshot[] {
    return (this.s.acceptedSnapshotsAfter.all(id, limit) as Row[]).map((r) => ({
      id: r.id as number,
      endpoint: r.endpoint as string,
      indexId: r.index_id as string | null,
      fetchedAt: r.fetched_at as number,
      asOf: r.as_of as number | null,
      hash: r.hash as string,
      raw: inflateRawSync(r.raw as Buffer).toString('utf8'),
      afterSeq: r.after_seq as number,
    }));
  }

  snapshotCounts(): { endpoint: string; status: string; count: number }[] {
    return this.s.snapshotCounts.all() as { endpoint: string; status: string; count: number }[];
  }

  // --- normalized rows ---

  insertComposition(snapshotId: number, c: Composition): void {
    for (const k of c.constituents) {
      this.s.insertCompositionRow.run(snapshotId, this.tokenId(k.address, k.symbol), k.weight, k.target_weight, k.price_usd, k.units ?? null);
    }
  }

  private tokenId(address: string, symbol: string): number {
    let id = this.tokenIds.get(address);
    if (id === undefined) {
      this.s.insertTokenId.run(address, symbol);
      id = (this.s.tokenId.get(address) as { id: number }).id;
      this.tokenIds.set(address, id);
      if (this.db.inTransaction) this.uncommittedTokens.push(address);
    }
    return id;
  }

  /** The latest composition stored at or before `at` (epoch ms). */
  compositionAt(
    indexId: string,
    at = Number.MAX_SAFE_INTEGER,
  ): { asOf: number; constituents: { address: string; symbol: string; weight: number; targetWeight: number; priceUsd: number; units: number | null }[] } | undefined {
    const rows = this.s.compositionAt.all(indexId, at) as Row[];
    if (rows.length === 0) return undefined;
    return {
      asOf: rows[0]!.as_of as number,
      constituents: rows.map((r) => ({
        address: r.address as string,
        symbol: r.symbol as string,
        weight: r.weight as number,
        targetWeight: r.target_weight as number,
        priceUsd: r.price_usd as number,
        units: r.units as number | null,
      })),
    };
  }

  /** The index value at or before `at`: the latest performance snapshot, else the latest history point. */
  navAt(indexId: string, at: number): { nav: number; asOf: number } | undefined {
    const r = this.s.navAt.get(indexId, at, indexId, at) as { nav: number; as_of: number } | undefined;
    return r ? { nav: r.nav, asOf: r.as_of } : undefined;
  }

  /** As a composition named the token, else as the token list does: a runner fed by the event stream may hold only the list. */
  tokenSymbol(address: string): string | undefined {
    return (this.s.tokenSymbol.get(address, address) as { symbol: string } | undefined)?.symbol;
  }

  /**
   * A token's price as of `at` or before: from the latest composition (`as_of` no later than
   * `at`) of the indexes that hold it; a token dropped from every index keeps its last price.
   */
  tokenPriceAt(address: string, at: number): { priceUsd: number; asOf: number } | undefined {
    type Row = { price_usd: number; as_of: number } | undefined;
    // A token an index holds: its composition price, unless the token list saw it later. One
    // no index holds yet (a rebalance just announced adds it): the token list's price, as
    // observed by `at` (so a replay of the past never sees it early).
    const held = this.s.tokenPriceNow.get({ address, at }) as Row;
    const listed = this.s.listedTokenPrice.get({ address, at }) as Row;
    const r = held && listed ? (listed.as_of > held.as_of ? listed : held) : (held ?? listed ?? (this.s.tokenPriceAt.get({ address, at }) as Row));
    return r ? { priceUsd: r.price_usd, asOf: r.as_of } : undefined;
  }

  /** Rebalancing records public at `at` (announced by then), each with its status as it was observed by then. */
  rebalancesAt(indexId: string, at: number): (Rebalance & { observedStatus: string })[] {
    return (this.s.rebalancesAt.all({ at, indexId }) as { record: string; observed_status: string }[]).map((r) => ({
      ...(JSON.parse(r.record) as Rebalance),
      observedStatus: r.observed_status,
    }));
  }

  /**
   * An index's history in [from, to] as a live bot knows it: the backfilled points, then,
   * after the last of them, what its own polls observed (the last NAV polled in each
   * interval, at the time it was as of). Only `backfill` writes history points: without the
   * polls a running strategy's `ctx.data.history` would stop at the last backfill, or be
   * empty, while a backtest of the same strategy saw it all. A replay reads the points alone
   * (`history.between`): what it replays is history.
   */
  historyBetween(indexId: string, interval: string, from: number, to: number): { ts: number; nav: number }[] {
    const step = INTERVAL_MS[interval as keyof typeof INTERVAL_MS];
    if (step === undefined) return this.history.between(indexId, interval, from, to);
    return this.s.observedHistory.all({ indexId, interval, from, to, step }) as { ts: number; nav: number }[];
  }

  insertPerformance(snapshotId: number, p: Performance): void {
    this.s.insertPerformance.run(p.index_id, Date.parse(p.as_of), p.nav, JSON.stringify(p.returns), snapshotId);
  }

  /**
   * A rebalancing record as a poll (`seenAt`: the poll's time) or a backfill (the fetch's)
   * gave it. Each of its statuses is stored once, when first seen, at the time
   * {@link statusTimes} gives it.
   */
  upsertRebalance(r: Rebalance, seenAt: number): void {
    this.s.upsertRebalance.run(r.id, r.index_id, r.status, Date.parse(r.announced_at), Date.parse(r.effective_at), r.completed_at ? Date.parse(r.completed_at) : null, JSON.stringify(r), seenAt);
    for (const [status, at] of statusTimes(r, seenAt)) this.s.insertStatusChange.run(r.id, status, at);
  }

  /**
   * Every status change of the given indexes' rebalances in (from, to], in the order they
   * became known, read as the caller goes: only the sort keys are sorted, and each record is
   * read and parsed when its change is reached, so a long history is never held whole.
   */
  *rebalanceTransitions(indexIds: readonly string[], from: number, to: number): Generator<{ record: Rebalance; status: string; at: number }> {
    for (const [id, status, at] of notBusy(this.db, this.s.transitions).raw().iterate(JSON.stringify(indexIds), from, to) as Iterable<[string, string, number]>) {
      yield { record: JSON.parse((this.s.rebalanceRecord.get(id) as { record: string }).record) as Rebalance, status, at };
    }
  }

  /** How many status changes `rebalanceTransitions` gives for the same arguments. */
  rebalanceTransitionCount(indexIds: readonly string[], from: number, to: number): number {
    return this.s.transitionCount.pluck().get(JSON.stringify(indexIds), from, to) as number;
  }

  rebalanceEffectiveAt(rebalanceId: string): number | undefined {
    return (this.s.effectiveAt.get(rebalanceId) as { effective_at: number } | undefined)?.effective_at;
  }

  upsertToken(t: Token, observedAt: number): void {
    this.s.upsertToken.run(t.address, t.symbol, t.price_usd, JSON.stringify(t), observedAt);
  }

  upsertIndex(i: IndexSummary, observedAt: number): void {
    this.s.upsertIndex.run(i.id, i.name, i.status ?? null, JSON.stringify(i), observedAt, observedAt);
  }

  markDelisted(indexId: string, observedAt: number): void {
    this.s.markDelisted.run(observedAt, indexId);
  }

  // --- detector state ---

  /** The detector's memory for `key`. Callers treat it as read-only (the detectors are pure). */
  detectorState<T>(key: string): T | undefined {
    const cached = this.stateCache.get(key);
    if (cached) return cached.value as T;
    const row = this.s.getState.get(key) as { value: string } | undefined;
    if (!row) return undefined;
    const value = JSON.parse(row.value) as T;
    this.stateCache.set(key, { json: row.value, value });
    return value;
  }

  /** Writes the state if it differs from what is stored. Inside a transaction that rolls back, the cache is dropped. */
  setDetectorState(key: string, value: unknown): void {
    const json = JSON.stringify(value);
    if (this.stateCache.get(key)?.json === json) return;
    this.s.setState.run(key, json);
    this.stateCache.set(key, { json, value });
  }

  // --- events ---

  /** Appends events not stored before (by id) and returns those, with their `seq`. */
  appendEvents(events: readonly NewEvent[]): IndexbotEvent[] {
    const stored: IndexbotEvent[] = [];
    for (const e of events) {
      const res = this.s.insertEvent.run(e.id, e.type, e.indexId, e.occurredAt, e.detectedAt, JSON.stringify(e.payload), e.id);
      if (res.changes === 1) stored.push({ ...e, seq: Number(res.lastInsertRowid) } as IndexbotEvent);
    }
    return stored;
  }

  eventsAfter(seq: number, limit = 1000): IndexbotEvent[] {
    return (this.s.eventsAfter.all(seq, limit) as Row[]).map(toEvent);
  }

  eventCounts(): Partial<Record<EventType, number>> {
    return Object.fromEntries((this.s.eventCounts.all() as { type: string; count: number }[]).map((r) => [r.type, r.count]));
  }

  lastEventSeq(): number {
    return (this.s.lastSeq.get() as { seq: number | null }).seq ?? 0;
  }

  // --- retention ---

  /**
   * Deletes up to `limit` snapshots fetched before `cutoff` (their composition rows go with
   * them), never the newest of an endpoint and index: the next poll compares against it.
   * Returns how many went; call again until 0.
   */
  pruneSnapshots(cutoff: number, limit: number): number {
    return this.transaction(() => this.s.pruneSnapshots.run(cutoff, limit).changes);
  }

  /** Deletes up to `limit` outbox rows delivered or given up before `cutoff`. */
  pruneOutbox(cutoff: number, limit: number): number {
    return this.s.pruneOutbox.run(cutoff, limit).changes;
  }

  /**
   * Deletes up to `limit` `performance.updated` events detected before `cutoff` that every
   * consumer's cursor has passed and nothing still needs (a parked event, an alert owed).
   * Rebalance and index events are kept: they are the bot's record.
   */
  prunePerformanceEvents(cutoff: number, limit: number): number {
    return this.s.prunePerformanceEvents.run({ cutoff, limit }).changes;
  }

  /** Deletes up to `limit` performance points older than `cutoff`, never an index's newest (its NAV now). */
  prunePerformancePoints(cutoff: number, limit: number): number {
    return this.s.prunePerformancePoints.run(cutoff, limit).changes;
  }

  // --- consumer cursors ---

  cursor(consumer: string): number {
    return (this.s.getCursor.get(consumer) as { seq: number } | undefined)?.seq ?? 0;
  }

  setCursor(consumer: string, seq: number, at: number): void {
    this.s.setCursor.run(consumer, seq, at);
  }

  /**
   * Records a cursor at `seq` for each consumer that has none yet, in one transaction; says
   * which it recorded. Where a strategy or alert sink new to the database starts (after what
   * the database holds), written at once, even at 0: killed before its first commit, a restart
   * must know it ran, not take it for new and skip what came meanwhile.
   */
  startCursors(starts: readonly (readonly [consumer: string, seq: number])[], at: number): (readonly [consumer: string, seq: number])[] {
    return this.transaction(() => starts.filter(([consumer, seq]) => this.s.startCursor.run(consumer, seq, at).changes > 0));
  }

  /** Drops consumers' cursors (a strategy or sink no longer run: retention stops keeping what they had not read). Returns how many there were. */
  dropCursors(consumers: readonly string[]): number {
    return this.transaction(() => consumers.reduce((n, c) => n + this.s.dropCursor.run(c).changes, 0));
  }

  cursors(): { consumer: string; seq: number; updatedAt: number }[] {
    return (this.s.cursors.all() as Row[]).map((r) => ({ consumer: r.consumer as string, seq: r.seq as number, updatedAt: r.updated_at as number }));
  }

  // --- poll jobs and runtime state ---

  recordJobRun(job: string, at: number, error?: string): void {
    if (error === undefined) this.s.jobOk.run(job, at, at);
    else this.s.jobFailed.run(job, at, error);
  }

  jobStates(): JobState[] {
    return (this.s.jobs.all() as Row[]).map((r) => ({
      job: r.job as string,
      lastRunAt: r.last_run_at as number | null,
      lastSuccessAt: r.last_success_at as number | null,
      lastError: r.last_error as string | null,
      consecutiveFailures: r.consecutive_failures as number,
    }));
  }

  setRuntime(key: string, value: unknown, at: number): void {
    this.s.setRuntime.run(key, JSON.stringify(value), at);
  }

  deleteRuntime(key: string): void {
    this.s.deleteRuntime.run(key);
  }

  /** A random id, made the first time it is asked for and kept with the database: what tells its numbered rows from another database's. */
  databaseId(): string {
    const kept = this.runtime<string>(DATABASE_ID);
    if (kept) return kept.value;
    const id = randomBytes(4).toString('hex');
    this.setRuntime(DATABASE_ID, id, Date.now());
    return id;
  }

  runtime<T>(key: string): { value: T; updatedAt: number } | undefined {
    const row = this.s.getRuntime.get(key) as { value: string; updated_at: number } | undefined;
    return row ? { value: JSON.parse(row.value) as T, updatedAt: row.updated_at } : undefined;
  }

  /**
   * Each index's history, each interval apart: one count over 1h and 1d mixed told nothing of
   * either, and a hole showed only when a backtest met it (trial 34). `missing`: points the span
   * from first to last has room for and the cache does not hold. A scan of the history: for
   * `status`, not for what polls often.
   */
  historySpans(): Map<string, HistorySpan[]> {
    const spans = new Map<string, HistorySpan[]>();
    for (const r of this.s.historySpans.all() as Row[]) {
      const step = INTERVAL_MS[r.interval as keyof typeof INTERVAL_MS];
      const [points, first, last] = [r.points as number, r.first as number, r.last as number];
      const missing = step === undefined ? 0 : Math.max(0, Math.floor((last - first) / step) + 1 - points);
      spans.set(r.index_id as string, [...(spans.get(r.index_id as string) ?? []), { interval: r.interval as string, points, first, last, missing }]);
    }
    return spans;
  }

  indexCacheSummaries(): IndexCacheSummary[] {
    return (this.s.indexSummaries.all() as Row[]).map((r) => ({
      indexId: r.index_id as string,
      name: r.name as string | null,
      status: r.status as string | null,
      compositionAsOf: r.composition_as_of as number | null,
      compositionFetchedAt: r.composition_fetched_at as number | null,
      compositionSnapshots: r.composition_snapshots as number,
      performancePoints: r.performance_points as number,
      historyPoints: r.history_points as number,
      historyFirst: r.history_first as number | null,
      historyLast: r.history_last as number | null,
      rebalances: r.rebalances as number,
    }));
  }

  // --- TokenStore: the wallet session's token pair lives here once the store exists ---

  load(baseUrl: string): StoredTokens | undefined {
    const r = this.s.getTokens.get(baseUrl) as Row | undefined;
    if (!r) return undefined;
    return {
      baseUrl,
      wallet: r.wallet as string,
      accessToken: r.access_token as string,
      refreshToken: r.refresh_token as string,
      accessExpiresAt: r.access_expires_at as number,
      refreshExpiresAt: (r.refresh_expires_at as number | null) ?? undefined,
    };
  }

  save(t: StoredTokens): void {
    this.s.saveTokens.run(t.baseUrl, t.wallet, t.accessToken, t.refreshToken, t.accessExpiresAt, t.refreshExpiresAt ?? null);
  }

  clear(baseUrl: string): void {
    this.s.clearTokens.run(baseUrl);
  }
}

function migrate(db: Database.Database, from: number): void {
  const pending = MIGRATIONS.filter((m) => m.version > from);
  // A database made before indexbot set its application id gets it at its next writable open.
  const unmarked = db.pragma('application_id', { simple: true }) !== APPLICATION_ID;
  if (pending.length === 0 && !unmarked) return;
  registerMigrationFunctions(db);
  db.transaction(() => {
    for (const m of pending) {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    }
    if (unmarked) db.pragma(`application_id = ${APPLICATION_ID}`);
  })();
}

function toEvent(r: Row): IndexbotEvent {
  return {
    seq: r.seq as number,
    id: r.id as string,
    type: r.type as EventType,
    indexId: r.index_id as string,
    occurredAt: r.occurred_at as number,
    detectedAt: r.detected_at as number,
    payload: JSON.parse(r.payload as string),
  } as IndexbotEvent;
}

function prepare(db: Database.Database) {
  return {
    pruneSnapshots: db.prepare(
      `DELETE FROM snapshots WHERE id IN (
         SELECT id FROM snapshots s WHERE fetched_at < ?
           AND id < (SELECT MAX(id) FROM snapshots x WHERE x.endpoint = s.endpoint AND x.index_id IS s.index_id)
         ORDER BY id LIMIT ?)`,
    ),
    pruneOutbox: db.prepare("DELETE FROM alert_outbox WHERE rowid IN (SELECT rowid FROM alert_outbox WHERE status != 'pending' AND finished_at < ? LIMIT ?)"),
    // The cursors that count are those in the event log: a sink's cursor in the strategy
    // alerts (alerts/dispatcher.ts, strategyAlertConsumer) counts alert ids, not seqs. With
    // no consumer at all, every event has been passed.
    prunePerformanceEvents: db.prepare(
      `DELETE FROM events WHERE seq IN (
         SELECT seq FROM events WHERE type = 'performance.updated' AND detected_at < @cutoff
           AND seq <= (SELECT COALESCE(MIN(seq), (SELECT MAX(seq) FROM events)) FROM cursors WHERE consumer NOT LIKE 'alert:%:strategy-alerts')
           AND seq NOT IN (SELECT seq FROM parked_events)
           AND seq NOT IN (SELECT seq FROM alert_outbox WHERE status = 'pending')
         ORDER BY seq LIMIT @limit)`,
    ),
    prunePerformancePoints: db.prepare(
      `DELETE FROM performance_points WHERE rowid IN (
         SELECT rowid FROM performance_points p WHERE as_of < ?
           AND as_of < (SELECT MAX(as_of) FROM performance_points x WHERE x.index_id = p.index_id)
         LIMIT ?)`,
    ),
    lastHash: db.prepare('SELECT hash FROM snapshots WHERE endpoint = ? AND index_id IS ? ORDER BY id DESC LIMIT 1'),
    insertSnapshot: db.prepare(
      `INSERT INTO snapshots (endpoint, index_id, fetched_at, as_of, hash, raw, status, error, after_seq)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0))`,
    ),
    acceptedSnapshotsAfter: db.prepare(
      "SELECT id, endpoint, index_id, fetched_at, as_of, hash, raw, after_seq FROM snapshots WHERE id > ? AND status = 'accepted' AND after_seq IS NOT NULL ORDER BY id LIMIT ?",
    ),
    snapshotRaw: db.prepare('SELECT raw FROM snapshots WHERE id = ?'),
    snapshotCounts: db.prepare('SELECT endpoint, status, COUNT(*) AS count FROM snapshots GROUP BY endpoint, status ORDER BY endpoint, status'),
    insertCompositionRow: db.prepare('INSERT INTO composition_rows (snapshot_id, token_id, weight, target_weight, price_usd, units) VALUES (?, ?, ?, ?, ?, ?)'),
    insertTokenId: db.prepare('INSERT OR IGNORE INTO token_ids (address, symbol) VALUES (?, ?)'),
    tokenId: db.prepare('SELECT id FROM token_ids WHERE address = ?'),
    tokenSymbol: db.prepare('SELECT symbol FROM (SELECT symbol, 0 AS o FROM token_ids WHERE address = ? UNION ALL SELECT symbol, 1 FROM tokens WHERE address = ?) ORDER BY o LIMIT 1'),
    compositionAt: db.prepare(
      `SELECT s.as_of, t.address, t.symbol, r.weight, r.target_weight, r.price_usd, r.units
       FROM composition_rows r JOIN token_ids t ON t.id = r.token_id JOIN snapshots s ON s.id = r.snapshot_id
       WHERE r.snapshot_id = (
         SELECT id FROM snapshots WHERE endpoint = 'composition' AND status = 'accepted' AND index_id = ? AND as_of <= ? ORDER BY as_of DESC, id DESC LIMIT 1
       ) ORDER BY r.target_weight DESC, t.symbol`,
    ),
    navAt: db.prepare(
      `SELECT nav, as_of FROM (
         SELECT nav, as_of FROM performance_points WHERE index_id = ? AND as_of <= ?
         UNION ALL SELECT nav, ts AS as_of FROM history_points WHERE index_id = ? AND ts <= ?
       ) ORDER BY as_of DESC LIMIT 1`,
    ),
    // The common case, a token some index holds: each index's latest composition as of @at,
    // found through snapshots_by_time, then one primary-key probe per index.
    tokenPriceNow: db.prepare(
      `SELECT r.price_usd, s.as_of FROM indexes i
       JOIN snapshots s ON s.id = (
         SELECT id FROM snapshots x WHERE x.endpoint = 'composition' AND x.status = 'accepted' AND x.index_id = i.id AND x.as_of <= @at
         ORDER BY x.as_of DESC, x.id DESC LIMIT 1)
       JOIN composition_rows r ON r.snapshot_id = s.id AND r.token_id = (SELECT id FROM token_ids WHERE address = @address)
       ORDER BY s.as_of DESC LIMIT 1`,
    ),
    listedTokenPrice: db.prepare('SELECT price_usd, updated_at AS as_of FROM tokens WHERE address = @address AND updated_at <= @at'),
    // A token no index holds any more: its last listed price, the long way round.
    tokenPriceAt: db.prepare(
      `SELECT r.price_usd, s.as_of FROM composition_rows r JOIN snapshots s ON s.id = r.snapshot_id
       WHERE r.token_id = (SELECT id FROM token_ids WHERE address = @address) AND s.as_of <= @at ORDER BY s.as_of DESC LIMIT 1`,
    ),
    rebalancesAt: db.prepare(
      `SELECT * FROM (
         SELECT r.record, r.announced_at,
           (SELECT c.status FROM rebalance_status_changes c WHERE c.rebalance_id = r.id AND c.observed_at <= @at ORDER BY c.observed_at DESC LIMIT 1) AS observed_status
         FROM rebalances r WHERE r.index_id = @indexId AND r.announced_at <= @at
       ) WHERE observed_status IS NOT NULL ORDER BY announced_at DESC`,
    ),
    observedHistory: db.prepare(
      `WITH backfilled AS (SELECT ts, nav FROM history_points WHERE index_id = @indexId AND interval = @interval AND ts >= @from AND ts <= @to)
       SELECT ts, nav FROM backfilled
       UNION ALL
       SELECT p.as_of AS ts, p.nav FROM performance_points p
       WHERE p.index_id = @indexId AND p.as_of >= @from AND p.as_of <= @to
         AND p.as_of > COALESCE((SELECT MAX(ts) FROM history_points WHERE index_id = @indexId AND interval = @interval AND ts <= @to), -1)
         AND p.as_of = (SELECT MAX(q.as_of) FROM performance_points q WHERE q.index_id = @indexId AND q.as_of <= @to AND q.as_of / CAST(@step AS INTEGER) = p.as_of / CAST(@step AS INTEGER))
       ORDER BY ts`,
    ),
    insertPerformance: db.prepare('INSERT OR REPLACE INTO performance_points (index_id, as_of, nav, returns, snapshot_id) VALUES (?, ?, ?, ?, ?)'),
    upsertRebalance: db.prepare(
      `INSERT INTO rebalances (id, index_id, status, announced_at, effective_at, completed_at, record, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, completed_at = excluded.completed_at, record = excluded.record, updated_at = excluded.updated_at`,
    ),
    effectiveAt: db.prepare('SELECT effective_at FROM rebalances WHERE id = ?'),
    transitions: db.prepare(
      `SELECT c.rebalance_id, c.status, c.observed_at FROM rebalance_status_changes c JOIN rebalances r ON r.id = c.rebalance_id
       WHERE r.index_id IN (SELECT value FROM json_each(?)) AND c.observed_at > ? AND c.observed_at <= ?
       ORDER BY c.observed_at, CASE c.status WHEN 'announced' THEN 0 ELSE 1 END, r.id`,
    ),
    transitionCount: db.prepare(
      `SELECT COUNT(*) FROM rebalance_status_changes c JOIN rebalances r ON r.id = c.rebalance_id
       WHERE r.index_id IN (SELECT value FROM json_each(?)) AND c.observed_at > ? AND c.observed_at <= ?`,
    ),
    rebalanceRecord: db.prepare('SELECT record FROM rebalances WHERE id = ?'),
    insertStatusChange: db.prepare('INSERT OR IGNORE INTO rebalance_status_changes (rebalance_id, status, observed_at) VALUES (?, ?, ?)'),
    upsertToken: db.prepare(
      `INSERT INTO tokens (address, symbol, price_usd, record, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (address) DO UPDATE SET symbol = excluded.symbol, price_usd = excluded.price_usd, record = excluded.record, updated_at = excluded.updated_at`,
    ),
    upsertIndex: db.prepare(
      `INSERT INTO indexes (id, name, status, listed, record, first_seen_at, updated_at) VALUES (?, ?, ?, 1, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET name = excluded.name, status = excluded.status, listed = 1, record = excluded.record, updated_at = excluded.updated_at`,
    ),
    markDelisted: db.prepare('UPDATE indexes SET listed = 0, updated_at = ? WHERE id = ?'),
    getState: db.prepare('SELECT value FROM detector_state WHERE key = ?'),
    setState: db.prepare('INSERT INTO detector_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
    // Not INSERT OR IGNORE: with AUTOINCREMENT an ignored copy still takes a seq, and the log would skip it.
    insertEvent: db.prepare('INSERT INTO events (id, type, index_id, occurred_at, detected_at, payload) SELECT ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM events WHERE id = ?)'),
    eventsAfter: db.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?'),
    eventCounts: db.prepare('SELECT type, COUNT(*) AS count FROM events GROUP BY type ORDER BY type'),
    lastSeq: db.prepare('SELECT MAX(seq) AS seq FROM events'),
    getCursor: db.prepare('SELECT seq FROM cursors WHERE consumer = ?'),
    setCursor: db.prepare('INSERT INTO cursors (consumer, seq, updated_at) VALUES (?, ?, ?) ON CONFLICT (consumer) DO UPDATE SET seq = excluded.seq, updated_at = excluded.updated_at'),
    startCursor: db.prepare('INSERT INTO cursors (consumer, seq, updated_at) VALUES (?, ?, ?) ON CONFLICT (consumer) DO NOTHING'),
    cursors: db.prepare('SELECT consumer, seq, updated_at FROM cursors ORDER BY consumer'),
    dropCursor: db.prepare('DELETE FROM cursors WHERE consumer = ?'),
    jobOk: db.prepare(
      `INSERT INTO poll_jobs (job, last_run_at, last_success_at, last_error, consecutive_failures) VALUES (?, ?, ?, NULL, 0)
       ON CONFLICT (job) DO UPDATE SET last_run_at = excluded.last_run_at, last_success_at = excluded.last_success_at, last_error = NULL, consecutive_failures = 0`,
    ),
    jobFailed: db.prepare(
      `INSERT INTO poll_jobs (job, last_run_at, last_error, consecutive_failures) VALUES (?, ?, ?, 1)
       ON CONFLICT (job) DO UPDATE SET last_run_at = excluded.last_run_at, last_error = excluded.last_error, consecutive_failures = consecutive_failures + 1`,
    ),
    jobs: db.prepare('SELECT * FROM poll_jobs ORDER BY job'),
    deleteRuntime: db.prepare('DELETE FROM runtime WHERE key = ?'),
    setRuntime: db.prepare('INSERT INTO runtime (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at'),
    getRuntime: db.prepare('SELECT value, updated_at FROM runtime WHERE key = ?'),
    indexSummaries: db.prepare(
      `SELECT ids.index_id, i.name, i.status,
         (SELECT MAX(as_of) FROM snapshots c WHERE c.index_id = ids.index_id AND c.endpoint = 'composition' AND c.status = 'accepted') AS composition_as_of,
         (SELECT MAX(fetched_at) FROM snapshots c WHERE c.index_id = ids.index_id AND c.endpoint = 'composition' AND c.status = 'accepted') AS composition_fetched_at,
         (SELECT COUNT(*) FROM snapshots s WHERE s.index_id = ids.index_id AND s.endpoint = 'composition' AND s.status = 'accepted') AS composition_snapshots,
         (SELECT COUNT(*) FROM performance_points p WHERE p.index_id = ids.index_id) AS performance_points,
         (SELECT COUNT(*) FROM history_points h WHERE h.index_id = ids.index_id) AS history_points,
         (SELECT MIN(ts) FROM history_points h WHERE h.index_id = ids.index_id) AS history_first,
         (SELECT MAX(ts) FROM history_points h WHERE h.index_id = ids.index_id) AS history_last,
         (SELECT COUNT(*) FROM rebalances r WHERE r.index_id = ids.index_id) AS rebalances
       FROM (
         -- A cache filled by backfill alone has history and rebalancing records, no index list or snapshots.
         SELECT id AS index_id FROM indexes UNION SELECT DISTINCT index_id FROM snapshots WHERE index_id IS NOT NULL
         UNION SELECT DISTINCT index_id FROM history_points UNION SELECT DISTINCT index_id FROM rebalances
       ) ids
       LEFT JOIN indexes i ON i.id = ids.index_id ORDER BY ids.index_id`,
    ),
    historySpans: db.prepare('SELECT index_id, interval, COUNT(*) AS points, MIN(ts) AS first, MAX(ts) AS last FROM history_points GROUP BY index_id, interval ORDER BY index_id, interval'),
    getTokens: db.prepare('SELECT * FROM auth_tokens WHERE base_url = ?'),
    saveTokens: db.prepare(
      `INSERT INTO auth_tokens (base_url, wallet, access_token, refresh_token, access_expires_at, refresh_expires_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (base_url) DO UPDATE SET wallet = excluded.wallet, access_token = excluded.access_token, refresh_token = excluded.refresh_token,
         access_expires_at = excluded.access_expires_at, refresh_expires_at = excluded.refresh_expires_at`,
    ),
    clearTokens: db.prepare('DELETE FROM auth_tokens WHERE base_url = ?'),
  };
}

/**
 * SQLite opens a file it may not write read-only without a word, and the first write fails
 * as if the disk were full: exit 75, to be restarted for ever, naming no file (trial 35: a
 * database chmod 444, and after a fix, the -shm file the failed start left read-only).
 */
function refuseReadOnlyFiles(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      accessSync(file, constants.W_OK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? '';
      if (code === 'ENOENT') continue;
      throw new StoreError(
        `${file} cannot be written (${WHY_NOT_WRITABLE[code] ?? (e as Error).message}, ${code}): the bot writes its database and the -wal and -shm files beside it; give them to the user it runs as (chown), or make them writable`,
        'STORE_UNAVAILABLE',
      );
    }
  }
}

/** Makes an empty file at `path` with mode 0600 unless one is there; what cannot be made is left to SQLite, which says why. */
function createPrivately(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch {
    // There already (EEXIST), or not makeable here: opening it reports that.
  }
}
