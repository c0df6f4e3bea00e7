/** `indexbot/client`: the typed, rate-aware client of the Index Fund Data Service API. */
export {
  IndexClient,
  type IndexClientOptions,
  type CallOptions,
  type ListOptions,
  type HistoryQuery,
  type RebalancingQuery,
  type Snapshot,
  type SnapshotKind,
  type SnapshotValues,
} from '../api/index.ts';
export { PageIterator, type Page, type PageRequest } from '../api/index.ts';
export { RateGate, type RateGateOptions, type RateGateSeed, type RateGateState, type Permit, type Priority } from '../ratelimit/index.ts';
/** `sharedBudgets: new RedisBudgets({ url })`: one budget for every process on a key (see the README's Redis section). */
export { RedisBudgets, type RedisBudgetsOptions } from '../ratelimit/index.ts';
export type { RequestObserver, SharedBudgetSource } from '../api/index.ts';
export { WalletKeypair, MemoryTokenStore, FileTokenStore, type TokenStore, type StoredTokens, type WalletSession } from '../auth/index.ts';
export {
  IndexbotError,
  ApiError,
  BadRequestError,
  AuthError,
  ForbiddenError,
  NotFoundError,
  RateLimitError,
  ServerError,
  NetworkError,
  TimeoutError,
  ResponseValidationError,
  MalformedResponseError,
  SigninRefusedError,
  KeypairError,
  ConfigError,
  UsageError,
  StoreError,
  StoreWriteError,
  StrategyError,
  BacktestDataError,
  type ErrorCode,
  type ErrorKind,
  type ValidationIssue,
} from '../core/errors.ts';
export { type Clock, systemClock } from '../core/clock.ts';
export { type Logger, createLogger, silentLogger } from '../core/logger.ts';
export type {
  IndexSummary,
  IndexDetail,
  Methodology,
  Constituent,
  Composition,
  Performance,
  HistoryPoint,
  HistoryInterval,
  RebalanceChange,
  Rebalance,
  RebalanceStatus,
  ReturnPeriod,
  Token,
  Holding,
  Portfolio,
  TokenPair,
  Tier,
  TierLimits,
} from '../contract/index.ts';
