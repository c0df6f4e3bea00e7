export { describeChanges, describeEvent, eventAlert, strategyAlert, testAlert } from './format.ts';
export {
  type Alert,
  type SinkConfig,
  type SinkFilter,
  type SendOutcome,
  type Sender,
  HttpSender,
  DEFAULT_ALERT_TYPES,
  matches,
  matchesStrategyAlert,
  request as sinkRequest,
  unmatchableFilterNames,
} from './sinks.ts';
export { AlertDispatcher, type DispatcherOptions, alertConsumer, isStrategyAlertConsumer, strategyAlertConsumer } from './dispatcher.ts';
