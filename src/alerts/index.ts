export { describeChanges, describeEvent } from './format.ts';
export { type SinkConfig, type SinkFilter, type SendOutcome, type Sender, HttpSender, DEFAULT_ALERT_TYPES, matches, request as sinkRequest } from './sinks.ts';
export { AlertDispatcher, type DispatcherOptions, alertConsumer } from './dispatcher.ts';
