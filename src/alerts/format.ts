import { plainText, weightChange } from '../core/index.ts';
import type { IndexbotEvent, WeightChange } from '../detect/index.ts';
import type { StrategyAlertRow } from '../store/index.ts';
import type { Alert } from './sinks.ts';

const pct = (w: number) => `${(w * 100).toFixed(2)}%`;
const when = (t: number) => new Date(t).toISOString().slice(0, 16).replace('T', ' ');

/** One line a person reads at a glance: what a rebalance adds, removes and reweights. */
export function describeChanges(changes: readonly WeightChange[]): string {
  const added = changes.filter((c) => c.action === 'add').map((c) => `+${c.symbol} ${pct(c.newWeight)}`);
  const removed = changes.filter((c) => c.action === 'remove').map((c) => `-${c.symbol} (was ${pct(c.oldWeight)})`);
  const reweighted = changes.filter((c) => c.action !== 'add' && c.action !== 'remove').map((c) => `${c.symbol} ${weightChange(c.oldWeight, c.newWeight, 2)}`);
  const parts = [added.length ? `added ${added.join(', ')}` : '', removed.length ? `removed ${removed.join(', ')}` : '', reweighted.length ? `reweighted ${reweighted.join(', ')}` : ''].filter(
    Boolean,
  );
  return parts.length ? parts.join('; ') : 'no weight changes';
}

/** The headline of an event, for logs, the console and every sink: plain text, whatever the server sent. */
export function describeEvent(e: IndexbotEvent): string {
  return plainText(headline(e));
}

function headline(e: IndexbotEvent): string {
  switch (e.type) {
    case 'rebalance.announced':
      return `${e.indexId}: rebalance ${e.payload.rebalanceId} announced, effective ${when(e.payload.effectiveAt)} UTC: ${describeChanges(e.payload.changes)}`;
    case 'rebalance.completed':
      return `${e.indexId}: rebalance ${e.payload.rebalanceId} completed at ${when(e.payload.effectiveAt)} UTC: ${describeChanges(e.payload.changes)}`;
    case 'rebalance.cancelled':
      return `${e.indexId}: rebalance ${e.payload.rebalanceId} cancelled (was due ${when(e.payload.effectiveAt)} UTC)`;
    case 'composition.drift':
      return `${e.indexId}: ${e.payload.symbol} drifted to ${pct(e.payload.weight)} against a target of ${pct(e.payload.target)}`;
    case 'performance.updated':
      return `${e.indexId}: value ${e.payload.nav.toFixed(2)}, 24h ${fmtReturn(e.payload.returns['24h'])}`;
    case 'index.listed':
      return `${e.indexId}: newly listed (${e.payload.index.name ?? e.indexId})`;
    case 'index.delisted':
      return `${e.indexId}: no longer listed`;
    case 'index.status_changed':
      return `${e.indexId}: status ${e.payload.previousStatus} -> ${e.payload.index.status}`;
  }
}

function fmtReturn(r: number | null | undefined): string {
  return r == null ? 'n/a' : `${r >= 0 ? '+' : ''}${(r * 100).toFixed(2)}%`;
}

const iso = (t: number) => new Date(t).toISOString();

export function eventAlert(e: IndexbotEvent): Alert {
  return { id: e.id, text: describeEvent(e), fields: { type: e.type, indexId: e.indexId, occurredAt: iso(e.occurredAt), event: e } };
}

/**
 * A strategy alert's idempotency key: its row and the database it is in (rows are numbered per
 * database), so a resend repeats it while two runners' alerts, or a new database's, never share one.
 */
export const strategyAlertKey = (a: Pick<StrategyAlertRow, 'strategy' | 'id'>, databaseId: string) => `strategy.alert:${a.strategy}:${databaseId}:${a.id}`;

/** A strategy's `ctx.alert(message, data)` as a message to a sink, under the key it was queued with. */
export function strategyAlert(a: StrategyAlertRow, key: string): Alert {
  return {
    id: key,
    text: plainText(`${a.strategy}: ${a.message}`),
    fields: { type: 'strategy.alert', strategy: a.strategy, indexId: a.indexId, occurredAt: iso(a.at), eventId: a.eventId, message: plainText(a.message), data: a.data },
  };
}

/** A message that only shows a sink reaches its channel (`doctor --send-test`, the HTTP face's test route). */
export function testAlert(from: 'doctor' | 'http', now: number): Alert {
  return {
    id: `${from}.test:${now}`,
    text: `indexbot ${from === 'doctor' ? 'doctor' : 'HTTP API'}: test message; alerts reach this channel`,
    fields: { type: `${from}.test`, occurredAt: new Date(now).toISOString() },
  };
}
