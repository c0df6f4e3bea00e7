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
export { RateGate, type RateGateOptions, type RateGateState, type Permit, type Priority } from '../ratelimit/index.ts';
export { WalletKeypair, MemoryTokenStore, FileTokenStore, type TokenStore, type StoredTokens } from '../auth/index.ts';
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
