export { EVENT_STREAM, GROUP_NAME, GROUP_NAME_RULE, publishedCursor } from './common.ts';
export { StreamAheadError, StreamPublisher, type StreamPublisherOptions, unpublishedEvents } from './publisher.ts';
export { StreamConsumer, type StreamConsumerOptions } from './consumer.ts';
export { STALE_READ_S, STREAM_HEARTBEAT, STREAM_MISSED, type StreamHeartbeat, type StreamMissed, lastHeartbeat } from './heartbeat.ts';
