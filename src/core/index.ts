export * from './errors.ts';
export { type Clock, systemClock, sleep, ManualClock } from './clock.ts';
export { type Logger, type LogFormat, type CreateLoggerOptions, silentLogger, createLogger } from './logger.ts';
