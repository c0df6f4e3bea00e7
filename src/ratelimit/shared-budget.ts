import type { Priority, ServerModel } from './rate-gate.ts';

/**
 * One credential's budget shared by every process that uses the credential. A `RateGate`
 * keeps its own pacing and priority order, and before admitting a request also takes a
 * token here; what its responses teach it is passed on, so it tightens the budget for all.
 */
export interface SharedBudget {
  /** Takes one request's token: `waitMs` 0 means go now (`seq` names the take), else ask again after it. */
  take(priority: Priority, local: LocalView): Promise<SharedTake>;
  /** What a response said; never waits (an observation that cannot be recorded is dropped). */
  observe(observation: SharedObservation): void;
  /** What this process last knew of the shared budget, for `status`. */
  state(): SharedBudgetState;
}

/** The gate's own view, from which a budget that does not exist yet (or a local fallback) starts. */
export interface LocalView {
  limit: number;
  burst: number;
  windowMs: number;
  /** What the server last said was left, minus what was sent since. */
  remaining: number | undefined;
  /** Until when that holds, in ms from now (a fixed window's reset). */
  resetInMs: number | undefined;
  /** Requests queued at the gate behind this one that one round trip may take tokens for too. @default 0 */
  waiting?: number;
}

export interface SharedTake {
  waitMs: number;
  /** Position of this take in the shared sequence; undefined when taken from the local fallback. */
  seq: number | undefined;
  /** Which budget the sequence is of (one Redis lost and one created anew count from 1 alike): when it was created. */
  born?: number | undefined;
}

export interface SharedObservation {
  /** `seq` and `born` of the take whose response this is. */
  seq: number | undefined;
  born?: number | undefined;
  serverLimit: number | undefined;
  remaining: number | undefined;
  /** The server's reset, in ms from now. */
  resetInMs: number | undefined;
  serverModel: ServerModel;
  /** After a 429: how long everyone should pause. */
  pauseMs: number | undefined;
}

export interface SharedBudgetState {
  /** `shared`: taking from Redis; `local`: Redis unreachable, pacing to `1/share` of the budget here. */
  mode: 'shared' | 'local';
  limit: number | undefined;
  burst: number | undefined;
  /** Tokens in the shared bucket at the last answer; undefined while Redis is away (`local`). */
  tokens: number | undefined;
  /** Processes that drew on this budget in the last minute, by id (`host:pid:nonce`). */
  processes: string[];
  /** The divisor of the local fallback: processes seen in the last minute, at least 2. */
  share: number;
}
