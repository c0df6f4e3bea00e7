import type Database from 'better-sqlite3';
import { type Decimal, ZERO, decimal, toText } from '../core/index.ts';

/** A paper position, exact (see core/money.ts); stored as decimal text. */
export interface PaperPosition {
  instrument: string;
  quantity: Decimal;
  costUsd: Decimal;
}

/** A paper account's cash, exact. */
export interface PaperAccount {
  account: string;
  initialCash: Decimal;
  cash: Decimal;
}

export interface PaperFill {
  id: number;
  account: string;
  eventId: string | null;
  instrument: string;
  side: 'buy' | 'sell';
  quantity: Decimal;
  price: Decimal;
  feeUsd: Decimal;
  at: number;
}

export interface ParkedEvent {
  strategy: string;
  seq: number;
  eventId: string;
  attempts: number;
  error: string;
  parkedAt: number;
}

/** An alert a strategy raised, with the index and seq of the event its handler ran for. */
export interface StrategyAlertRow {
  id: number;
  strategy: string;
  eventId: string | null;
  indexId: string | null;
  /** The seq of that event; 0 when it is no longer in the log. */
  seq: number;
  message: string;
  data: unknown;
  at: number;
}

type Row = Record<string, unknown>;

/** The strategies' tables, on the store's connection: written inside the store's transactions. */
export class StrategyTables {
  private readonly s: ReturnType<typeof prepare>;

  constructor(db: Database.Database) {
    this.s = prepare(db);
  }

  stateEntries(strategy: string): Map<string, unknown> {
    return new Map((this.s.stateAll.all(strategy) as Row[]).map((r) => [r.key as string, JSON.parse(r.value as string) as unknown]));
  }

  /** A key's value as JSON text, as the runtime has it already (undefined: deleted). */
  setState(strategy: string, key: string, json: string | undefined): void {
    if (json === undefined) this.s.stateDelete.run(strategy, key);
    else this.s.stateSet.run(strategy, key, json);
  }

  account(account: string): PaperAccount | undefined {
    const r = this.s.account.get(account) as Row | undefined;
    return r && accountRow(r);
  }

  accounts(): PaperAccount[] {
    return (this.s.accounts.all() as Row[]).map(accountRow);
  }

  fillCount(account: string): number {
    return (this.s.fillCount.get(account) as { n: number }).n;
  }

  openAccount(account: string, initialCash: Decimal): void {
    this.s.openAccount.run(account, toText(initialCash), toText(initialCash));
  }

  setCash(account: string, cash: Decimal): void {
    this.s.setCash.run(toText(cash), account);
  }

  positions(account: string): PaperPosition[] {
    return (this.s.positions.all(account) as Row[]).map((r) => ({ instrument: r.instrument as string, quantity: decimal(r.quantity as string), costUsd: decimal(r.cost_usd as string) }));
  }

  /** A position of quantity zero is closed: its row goes. */
  setPosition(account: string, p: PaperPosition): void {
    if (p.quantity.eq(ZERO)) this.s.deletePosition.run(account, p.instrument);
    else this.s.setPosition.run(account, p.instrument, toText(p.quantity), toText(p.costUsd));
  }

  insertFill(f: Omit<PaperFill, 'id'>): void {
    this.s.insertFill.run(f.account, f.eventId, f.instrument, f.side, toText(f.quantity), toText(f.price), toText(f.feeUsd), f.at);
  }

  fills(account: string): PaperFill[] {
    return (this.s.fills.all(account) as Row[]).map((r) => ({
      id: r.id as number,
      account: r.account as string,
      eventId: r.event_id as string | null,
      instrument: r.instrument as string,
      side: r.side as 'buy' | 'sell',
      quantity: decimal(r.quantity as string),
      price: decimal(r.price as string),
      feeUsd: decimal(r.fee_usd as string),
      at: r.at as number,
    }));
  }

  insertAlert(strategy: string, eventId: string | null, message: string, data: unknown, at: number): void {
    this.s.insertAlert.run(strategy, eventId, message, data === undefined ? null : JSON.stringify(data), at);
  }

  /** Alerts after `id`, oldest first. */
  alertsAfter(id: number, limit: number): StrategyAlertRow[] {
    return (this.s.alertsAfter.all(id, limit) as Row[]).map(alertRow);
  }

  alert(id: number): StrategyAlertRow | undefined {
    const row = this.s.alertById.get(id) as Row | undefined;
    return row && alertRow(row);
  }

  /** The newest strategy alert's id; 0 with none. */
  lastAlertId(): number {
    return (this.s.lastAlertId.get() as { id: number }).id;
  }

  alertCount(strategy: string): number {
    return (this.s.alertCount.get(strategy) as { n: number }).n;
  }

  park(p: ParkedEvent): void {
    this.s.park.run(p.strategy, p.seq, p.eventId, p.attempts, p.error, p.parkedAt);
  }

  parked(strategy?: string): ParkedEvent[] {
    return ((strategy === undefined ? this.s.parkedAll.all() : this.s.parked.all(strategy)) as Row[]).map((r) => ({
      strategy: r.strategy as string,
      seq: r.seq as number,
      eventId: r.event_id as string,
      attempts: r.attempts as number,
      error: r.error as string,
      parkedAt: r.parked_at as number,
    }));
  }

  unpark(strategy: string, seq: number): void {
    this.s.unpark.run(strategy, seq);
  }
}

const ALERT_SELECT = 'SELECT a.*, e.index_id, e.seq FROM strategy_alerts a LEFT JOIN events e ON e.id = a.event_id';

function accountRow(r: Row): PaperAccount {
  return { account: r.account as string, initialCash: decimal(r.initial_cash as string), cash: decimal(r.cash as string) };
}

function alertRow(r: Row): StrategyAlertRow {
  return {
    id: r.id as number,
    strategy: r.strategy as string,
    eventId: r.event_id as string | null,
    indexId: r.index_id as string | null,
    seq: (r.seq as number | null) ?? 0,
    message: r.message as string,
    data: r.data === null ? undefined : (JSON.parse(r.data as string) as unknown),
    at: r.at as number,
  };
}

function prepare(db: Database.Database) {
  return {
    stateAll: db.prepare('SELECT key, value FROM strategy_state WHERE strategy = ?'),
    stateSet: db.prepare('INSERT INTO strategy_state (strategy, key, value) VALUES (?, ?, ?) ON CONFLICT (strategy, key) DO UPDATE SET value = excluded.value'),
    stateDelete: db.prepare('DELETE FROM strategy_state WHERE strategy = ? AND key = ?'),
    account: db.prepare('SELECT * FROM paper_accounts WHERE account = ?'),
    accounts: db.prepare('SELECT * FROM paper_accounts ORDER BY account'),
    fillCount: db.prepare('SELECT COUNT(*) AS n FROM paper_fills WHERE account = ?'),
    openAccount: db.prepare('INSERT OR IGNORE INTO paper_accounts (account, initial_cash, cash) VALUES (?, ?, ?)'),
    setCash: db.prepare('UPDATE paper_accounts SET cash = ? WHERE account = ?'),
    positions: db.prepare('SELECT * FROM paper_positions WHERE account = ? ORDER BY instrument'),
    setPosition: db.prepare(
      'INSERT INTO paper_positions (account, instrument, quantity, cost_usd) VALUES (?, ?, ?, ?) ON CONFLICT (account, instrument) DO UPDATE SET quantity = excluded.quantity, cost_usd = excluded.cost_usd',
    ),
    deletePosition: db.prepare('DELETE FROM paper_positions WHERE account = ? AND instrument = ?'),
    insertFill: db.prepare('INSERT INTO paper_fills (account, event_id, instrument, side, quantity, price, fee_usd, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    fills: db.prepare('SELECT * FROM paper_fills WHERE account = ? ORDER BY id'),
    insertAlert: db.prepare('INSERT INTO strategy_alerts (strategy, event_id, message, data, at) VALUES (?, ?, ?, ?, ?)'),
    alertCount: db.prepare('SELECT COUNT(*) AS n FROM strategy_alerts WHERE strategy = ?'),
    lastAlertId: db.prepare('SELECT COALESCE(MAX(id), 0) AS id FROM strategy_alerts'),
    alertsAfter: db.prepare(`${ALERT_SELECT} WHERE a.id > ? ORDER BY a.id LIMIT ?`),
    alertById: db.prepare(`${ALERT_SELECT} WHERE a.id = ?`),
    park: db.prepare('INSERT OR REPLACE INTO parked_events (strategy, seq, event_id, attempts, error, parked_at) VALUES (?, ?, ?, ?, ?, ?)'),
    parked: db.prepare('SELECT * FROM parked_events WHERE strategy = ? ORDER BY seq'),
    parkedAll: db.prepare('SELECT * FROM parked_events ORDER BY strategy, seq'),
    unpark: db.prepare('DELETE FROM parked_events WHERE strategy = ? AND seq = ?'),
  };
}
