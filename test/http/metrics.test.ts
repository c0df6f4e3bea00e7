import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, type IndexbotEvent } from '../../src/detect/index.ts';
import { DaemonMetrics, type MetricSources } from '../../src/http/index.ts';
import { parsePrometheusText, sampleValue } from '../helpers/prom-text.ts';

const START = Date.UTC(2026, 10, 24, 12);

const announced = (occurredAt: number, detectedAt: number): IndexbotEvent =>
  ({ id: `rebalance.announced:sindex:rb_${occurredAt}`, type: 'rebalance.announced', indexId: 'sindex', occurredAt, detectedAt, payload: {}, seq: 1 }) as unknown as IndexbotEvent;

function sources(streamRead: MetricSources['streamRead'] = () => undefined): MetricSources {
  return {
    gates: () => [],
    jobs: () => [],
    strategies: () => [],
    outbox: () => [],
    dbPath: '/nonexistent',
    lastEventSeq: () => 0,
    streamRead,
    streamMissedEvents: () => 5,
    unpublishedEvents: () => 7,
    now: () => START + 60_000,
  };
}

async function scrape(metrics: DaemonMetrics) {
  return parsePrometheusText(await metrics.render());
}

describe('DaemonMetrics', () => {
  it('times the detection of what happened since the start, and counts, without timing, what happened before it', async () => {
    const metrics = new DaemonMetrics({ startedAt: START });
    metrics.bind(sources());
    // Announced four hours before the bot started, seen at its first poll: that is its downtime.
    metrics.onEvents([announced(START - 4 * 3_600_000, START + 2_000), announced(START + 10_000, START + 13_000)]);
    const m = await scrape(metrics);
    expect(sampleValue(m, 'indexbot_events_total', { type: 'rebalance.announced' })).toBe(2);
    expect(sampleValue(m, 'indexbot_event_detection_delay_seconds_count', { type: 'rebalance.announced' })).toBe(1);
    expect(sampleValue(m, 'indexbot_event_detection_delay_seconds_sum', { type: 'rebalance.announced' })).toBe(3);
  });

  it('does not time a fact the API gives no time for (a cancellation, an index list change): its occurredAt is when it was seen, a delay of 0 that never was', async () => {
    const metrics = new DaemonMetrics({ startedAt: START });
    metrics.bind(sources());
    const seenAt = START + 20_000;
    const untimed = (type: string) => ({ ...announced(seenAt, seenAt), id: `${type}:sindex:x`, type }) as unknown as IndexbotEvent;
    metrics.onEvents([untimed('rebalance.cancelled'), untimed('index.listed'), untimed('index.status_changed'), announced(START + 10_000, START + 13_000)]);
    const m = await scrape(metrics);
    expect(sampleValue(m, 'indexbot_events_total', { type: 'rebalance.cancelled' })).toBe(1);
    expect(sampleValue(m, 'indexbot_events_total', { type: 'index.listed' })).toBe(1);
    const timed = m
      .get('indexbot_event_detection_delay_seconds')!
      .samples.filter((x) => x.name.endsWith('_count') && x.value > 0)
      .map((x) => x.labels.type);
    expect(timed).toEqual(['rebalance.announced']);
  });

  it("has the event stream's gauges only in a runner, which reads the stream", async () => {
    const read = () => ({ value: { lag: 4, pending: 1 } as never, updatedAt: START + 30_000 });
    const single = new DaemonMetrics({ startedAt: START });
    single.bind(sources(read));
    const names = [...(await scrape(single)).keys()];
    // A collector or a single process read 0 for the stream it never reads: a lag of 0 and a last read just now.
    expect(names.filter((n) => n.startsWith('indexbot_event_stream_'))).toEqual([]);
    expect(names).toContain('indexbot_event_log_last_seq');
    const runner = new DaemonMetrics({ startedAt: START, streamReader: true });
    runner.bind(sources(read));
    const m = await scrape(runner);
    expect(sampleValue(m, 'indexbot_event_stream_lag')).toBe(4);
    expect(sampleValue(m, 'indexbot_event_stream_pending')).toBe(1);
    expect(sampleValue(m, 'indexbot_event_stream_last_read_age_seconds')).toBe(30);
    expect(sampleValue(m, 'indexbot_event_stream_missed_events')).toBe(5);
    expect(m.has('indexbot_event_stream_unpublished')).toBe(false);
  });

  it('has the gauge of events not yet published only in a collector, which publishes them', async () => {
    const collector = new DaemonMetrics({ startedAt: START, streamWriter: true });
    collector.bind(sources());
    const m = await scrape(collector);
    expect(sampleValue(m, 'indexbot_event_stream_unpublished')).toBe(7);
    expect(m.has('indexbot_event_stream_lag')).toBe(false);
    const single = new DaemonMetrics({ startedAt: START });
    single.bind(sources());
    expect((await scrape(single)).has('indexbot_event_stream_unpublished')).toBe(false);
  });

  it("has no stream sample before a runner's first read, nor a lag its last read could not give: 0 would read as caught up and just read", async () => {
    let read: ReturnType<MetricSources['streamRead']>;
    const runner = new DaemonMetrics({ startedAt: START, streamReader: true });
    runner.bind(sources(() => read));
    // The missed events are a count kept in the database, not a figure of the last read.
    const samples = async () =>
      [...(await scrape(runner)).values()]
        .filter((f) => f.name.startsWith('indexbot_event_stream_') && f.name !== 'indexbot_event_stream_missed_events')
        .flatMap((f) => f.samples.map((s) => `${s.name} ${s.value}`));
    expect(await samples()).toEqual([]);
    read = { value: { lag: null, pending: 2 } as never, updatedAt: START + 30_000 };
    expect(await samples()).toEqual(['indexbot_event_stream_pending 2', 'indexbot_event_stream_last_read_age_seconds 30']);
  });

  it('starts the counters whose label values are known in advance at 0: a series first seen at its first increase escapes increase() and alerts (found by trials)', async () => {
    const m = await scrape(new DaemonMetrics({ startedAt: START }));
    const samples = (name: string) => m.get(name)!.samples.map((s) => `${JSON.stringify(s.labels)} ${s.value}`);
    expect(samples('indexbot_polls_total')).toEqual(['{"outcome":"ok"} 0', '{"outcome":"failed"} 0']);
    expect(samples('indexbot_events_total')).toEqual(EVENT_TYPES.map((t) => `{"type":"${t}"} 0`));
  });

  it('starts the 429s and retries of each endpoint it polls, the fills of each strategy it runs and the deliveries of each alert sink at 0 (trials: a first fill was invisible to increase())', async () => {
    const metrics = new DaemonMetrics({ startedAt: START });
    metrics.expect({ endpoints: ['GET /tokens'], strategies: ['front-run'], sinks: ['ops', 'desk'] });
    const m = await scrape(metrics);
    const samples = (name: string) => m.get(name)!.samples.map((s) => `${JSON.stringify(s.labels)} ${s.value}`);
    expect(samples('indexbot_strategy_fills_total')).toEqual(['{"strategy":"front-run","side":"buy"} 0', '{"strategy":"front-run","side":"sell"} 0']);
    expect(samples('indexbot_alert_deliveries_total')).toEqual([
      '{"sink":"ops","outcome":"delivered"} 0',
      '{"sink":"ops","outcome":"failed"} 0',
      '{"sink":"desk","outcome":"delivered"} 0',
      '{"sink":"desk","outcome":"failed"} 0',
    ]);
    expect(samples('indexbot_alert_give_ups_total')).toEqual(['{"sink":"ops"} 0', '{"sink":"desk"} 0']);
    expect(samples('indexbot_api_rate_limited_total')).toEqual(['{"endpoint":"GET /tokens"} 0']);
    expect(samples('indexbot_api_retries_total')).toEqual(['{"endpoint":"GET /tokens"} 0']);
  });
});
