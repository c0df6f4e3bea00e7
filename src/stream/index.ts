export { EVENT_STREAM, GROUP_NAME, GROUP_NAME_RULE, publishedCursor } from './common.ts';
export { StreamAheadError, StreamPublisher, type StreamPublisherOptions } from './publisher.ts';
export { StreamConsumer, type StreamConsumerOptions } from './consumer.ts';
export { STREAM_HEARTBEAT, type StreamHeartbeat, lastHeartbeat } from './heartbeat.ts';
