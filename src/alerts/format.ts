import type { RebalanceChange } from '../contract/index.ts';

const pct = (w: number) => `${(w * 100).toFixed(2)}%`;

/** One line a person reads at a glance: what a rebalance adds, removes and reweights. */
export function describeChanges(changes: readonly RebalanceChange[]): string {
  const added = changes.filter((c) => c.action === 'add').map((c) => `+${c.symbol} ${pct(c.new_weight)}`);
  const removed = changes.filter((c) => c.action === 'remove').map((c) => `-${c.symbol} (was ${pct(c.old_weight)})`);
  const reweighted = changes
    .filter((c) => c.action !== 'add' && c.action !== 'remove')
    .map((c) => `${c.symbol} ${pct(c.old_weight)} -> ${pct(c.new_weight)}`);
  const parts = [
    added.length ? `added ${added.join(', ')}` : '',
    removed.length ? `removed ${removed.join(', ')}` : '',
    reweighted.length ? `reweighted ${reweighted.join(', ')}` : '',
  ].filter(Boolean);
  return parts.length ? parts.join('; ') : 'no weight changes';
}
