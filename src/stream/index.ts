export { EVENT_STREAM } from './common.ts';
export { StreamPublisher, type StreamPublisherOptions } from './publisher.ts';
export { StreamConsumer, type StreamConsumerOptions } from './consumer.ts';
export { STREAM_HEARTBEAT, type StreamHeartbeat, lastHeartbeat } from './heartbeat.ts';
