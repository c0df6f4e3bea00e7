export { EVENT_STREAM } from './common.ts';
export { StreamPublisher, type StreamPublisherOptions } from './publisher.ts';
export { STREAM_HEARTBEAT, StreamConsumer, type StreamConsumerOptions, type StreamHeartbeat } from './consumer.ts';
