export * from './errors.ts';
export { type Clock, MAX_TIMER_MS, systemClock, sleep, ManualClock } from './clock.ts';
export { eitherSignal } from './abort.ts';
export { type Logger, type LogFormat, type LogLevel, LOG_LEVELS, type CreateLoggerOptions, silentLogger, createLogger, countingInfo, demoted } from './logger.ts';
export { describeIssues, plainText, shortJson, weightChange } from './text.ts';
export { secretValues, withoutSecrets } from './secrets.ts';
export { mulberry32 } from './random.ts';
export { makeDirectories, WHY_NOT_WRITABLE } from './directories.ts';
export { type Decimal, ZERO, USD_DP, QUANTITY_DP, decimal, usd, quantity, quantityFor, bpsFactor, usdShare, valueAt, toNumber, toText } from './money.ts';
