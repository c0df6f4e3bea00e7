export { EVENT_STREAM } from './common.ts';
export { StreamPublisher, type StreamPublisherOptions } from './publisher.ts';
export { StreamConsumer, type StreamConsumerOptions } from './consumer.ts';
