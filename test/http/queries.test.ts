import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../src/api/index.ts';
import { indexesOverview } from '../../src/http/queries.ts';
import { ingest } from '../../src/poller/index.ts';
import { SnapshotStore } from '../../src/store/index.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const composition = {
  index_id: 'sindex',
  as_of: '2026-11-22T10:00:00.000Z',
  rebalance_id: 'rb_1',
  constituents: [
    { address: 'A', symbol: 'AAA', weight: 0.6, target_weight: 0.5, price_usd: 1 },
    { address: 'B', symbol: 'BBB', weight: 0.4, target_weight: 0.5, price_usd: 2 },
  ],
};
const snap: Snapshot<'composition'> = { kind: 'composition', raw: composition, requestId: 'r', value: composition as never };

describe('the dashboard index cards (indexesOverview)', () => {
  it('date a runner’s data by when it was fetched: a runner stores what the collector polled and has no poll jobs of its own', () => {
    const store = SnapshotStore.open(tempDbPath());
    const fetchedAt = Date.parse('2026-11-22T10:00:05.000Z');
    // As a runner stores a snapshot from the stream: the rows, no job state.
    ingest(store, snap, 'sindex', fetchedAt, 0.02);
    expect(store.jobStates()).toEqual([]);
    const [card] = indexesOverview(store, ['sindex'], fetchedAt + 9_000, fetchedAt + 9_000);
    expect(card).toMatchObject({
      indexId: 'sindex',
      lastPollAt: fetchedAt,
      lastPollAgeS: 9,
      top: [
        { symbol: 'AAA', weight: 0.6 },
        { symbol: 'BBB', weight: 0.4 },
      ],
    });
    store.close();
  });
});
