import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type Clock, type Logger, silentLogger, systemClock } from '../core/index.ts';
import { type RedisConnection, connectRedis, describeRedisError, reconnectWithinASecond, redactRedisUrl } from '../redis/index.ts';
import { BUDGET_SCRIPT } from './budget-script.ts';
import type { Priority } from './rate-gate.ts';
import type { LocalView, SharedBudget, SharedBudgetState, SharedObservation, SharedTake } from './shared-budget.ts';

const PRIORITY_ARG: Record<Priority, number> = { low: 0, normal: 1, high: 2 };
/** Most tokens one script call takes for a process with work queued. */
const MAX_LEASE = 16;
/** Most ended takes kept for Redis while it is away; older ones are left to its sweep. */
const MAX_UNSENT_ENDS = 10_000;
/** Most unreturned leases kept while Redis is away; older ones are left to its sweep. */
const MAX_UNRETURNED = 1_000;

export interface RedisBudgetsOptions {
  /** `redis://[:password@]host:port[/db]` or `rediss://…`. */
  url: string;
  /** Longest wait for one Redis command before falling back to the local share. @default 500 */
  commandTimeoutMs?: number | undefined;
  /** How often a process in local fallback asks Redis again, and beats its heartbeat. @default 1000 / 10000 */
  probeEveryMs?: number | undefined;
  heartbeatEveryMs?: number | undefined;
  /** Names this process in the heartbeat set. @default `host:pid:nonce` */
  processId?: string | undefined;
  /** For the local fallback's pacing. @default systemClock */
  clock?: Clock | undefined;
  logger?: Logger | undefined;
}

type BudgetCommand = (keyBucket: string, keyProcs: string, keyOutstanding: string, ...args: (string | number)[]) => Promise<(number | string)[]>;

/**
 * The shared budgets of one process, in Redis: one connection for all of them, one Lua script
 * (loaded once, then called by its SHA) that does each step atomically. Commands never queue
 * while Redis is away (`enableOfflineQueue: false`) and each is bounded in time, so a process
 * whose Redis is down is never held up: it paces to its local share and keeps asking Redis in
 * the background.
 */
export class RedisBudgets {
  readonly processId: string;
  /** Private: its type is ioredis's, whose declarations do not compile without skipLibCheck (they import untyped redis-errors). */
  private readonly redis: RedisConnection;
  private readonly budgets = new Map<string, RedisSharedBudget>();
  private readonly heartbeat: ReturnType<typeof setInterval>;
  private readonly command: BudgetCommand;
  readonly where: string;
  readonly probeEveryMs: number;
  /**
   * Connections made so far. A command sent on an earlier one (ioredis resends those in flight
   * at a drop, their timeout running from the first send) may fail after Redis is back: such a
   * failure says nothing of the connection there is now.
   */
  connections = 0;

  constructor(readonly options: RedisBudgetsOptions) {
    const { commandTimeoutMs = 500, heartbeatEveryMs = 10_000, probeEveryMs = 1_000 } = options;
    positiveMs('commandTimeoutMs', commandTimeoutMs, 60_000);
    positiveMs('probeEveryMs', probeEveryMs, 60_000);
    this.probeEveryMs = probeEveryMs;
    positiveMs('heartbeatEveryMs', heartbeatEveryMs, 60_000);
    this.where = redactRedisUrl(options.url);
    this.processId = options.processId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    const logger = options.logger ?? silentLogger;
    this.redis = connectRedis(options.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: commandTimeoutMs,
      connectTimeout: Math.max(1_000, commandTimeoutMs * 4),
      retryStrategy: reconnectWithinASecond,
    });
    let errorLogged = false;
    this.redis.on('error', (e: Error) => {
      if (errorLogged) return;
      errorLogged = true;
      // ioredis messages name host and port at most, never the password; log ours, not its URL.
      logger.warn({ redis: this.where, error: describeRedisError(e) }, 'Redis connection error (logged once per connection loss)');
    });
    this.redis.on('ready', () => {
      this.connections++;
      errorLogged = false;
      // Back on the shared budget now, not at the next take's probe: a process with nothing to do
      // would otherwise stay on its local share, the slower pace, when its work comes.
      for (const b of this.budgets.values()) b.rejoin();
    });
    this.redis.defineCommand('indexbotBudget', { numberOfKeys: 3, lua: BUDGET_SCRIPT });
    this.command = (this.redis as unknown as { indexbotBudget: BudgetCommand }).indexbotBudget.bind(this.redis);
    this.heartbeat = setInterval(() => {
      for (const b of this.budgets.values()) b.beat();
    }, heartbeatEveryMs);
    this.heartbeat.unref();
  }

  /** The budget of one credential, named by a digest of it (the credential never reaches Redis). */
  budget(credentialDigest: string, gateName: string): SharedBudget {
    let b = this.budgets.get(credentialDigest);
    if (!b) {
      b = new RedisSharedBudget(this, this.command, credentialDigest, gateName);
      this.budgets.set(credentialDigest, b);
    }
    return b;
  }

  /** Whether the connection is up now. */
  get connected(): boolean {
    return this.redis.status === 'ready';
  }

  /** Waits (bounded) for the first connection, so a process starts shared when Redis is up. */
  async ready(timeoutMs = 2_000): Promise<boolean> {
    if (this.connected) return true;
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.redis.once('ready', onReady);
    });
  }

  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    for (const b of this.budgets.values()) b.dropLease();
    this.redis.disconnect();
  }
}

/** Redis keys of one credential's budget; the braces are the cluster hash tag. */
export function budgetKeys(credentialDigest: string): [bucket: string, processes: string, outstanding: string] {
  const tag = `indexbot:{${credentialDigest}}`;
  return [`${tag}:budget`, `${tag}:processes`, `${tag}:outstanding`];
}

/** A digest of a credential that names its budget: long enough never to collide, useless to an attacker. */
export function credentialDigest(credential: string): string {
  return createHash('sha256').update(`indexbot-rate-budget:${credential}`).digest('hex').slice(0, 32);
}

class RedisSharedBudget implements SharedBudget {
  private readonly keys: [string, string, string];
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly probeEveryMs: number;
  private mode: 'shared' | 'local' = 'shared';
  private lastProbe = 0;
  private probing = false;
  private last: { limit: number; burst: number; tokens: number; processes: number } | undefined;
  private processes: string[] = [];
  /** The gate's view at its last take: the limits observations and heartbeats are sent with. */
  private view: LocalView | undefined;
  /** Tokens taken by the last call beyond its own, for the work queued behind it (seqs from `nextSeq`); what is left at `until` goes back. */
  private lease: { count: number; nextSeq: number; born: number; until: number; priority: number; timer: unknown } | undefined;
  /** Observations not yet sent to Redis: sent together at the end of this turn of the event loop. */
  private observed: { born: number | undefined; news: SharedObservation | undefined; serverLimit: number | undefined; pauseMs: number | undefined } | undefined;
  /** When the budget in Redis was created, as its last reply said: a take's seq is one of that budget's only. */
  private born: number | undefined;
  /**
   * Takes of the budget born then whose requests ended, not yet told to Redis: sent with the
   * next observation, and kept while Redis is away or a call fails, so none stays outstanding
   * there (lowering what a fixed window allows) until its sweep.
   */
  private ended: { born: number | undefined; seqs: number[] } = { born: undefined, seqs: [] };
  /** Leased tokens never sent whose return Redis has not had yet (it was away): returned when it answers. */
  private unreturned: { first: number; count: number; born: number }[] = [];
  /** The local fallback's bucket, at 1/share of the budget. */
  private local = { tokens: 0, at: 0, share: 2 };

  constructor(
    private readonly owner: RedisBudgets,
    private readonly command: BudgetCommand,
    digest: string,
    private readonly gateName: string,
  ) {
    this.keys = budgetKeys(digest);
    this.logger = owner.options.logger ?? silentLogger;
    this.clock = owner.options.clock ?? systemClock;
    this.probeEveryMs = owner.probeEveryMs;
  }

  async take(priority: Priority, view: LocalView): Promise<SharedTake> {
    // The first take also lists the processes drawing on the budget; the heartbeat keeps that fresh.
    if (!this.view) setImmediate(() => this.beat());
    this.view = view;
    if (this.mode === 'local') {
      this.probe(view);
      return this.takeLocally(view);
    }
    const leased = this.fromLease(priority);
    if (leased) return leased;
    const connection = this.owner.connections;
    try {
      const want = Math.min(this.maxLease(view), 1 + (view.waiting ?? 0));
      // The lease runs from when it was asked for: the reply's way back is not added to it.
      const askedAt = this.clock.now();
      const reply = await this.command(...this.keys, 'take', this.owner.processId, ...limits(view), PRIORITY_ARG[priority], view.remaining ?? '', view.resetInMs ?? '', want);
      const [waitMs, seq, born] = this.absorb(reply);
      if (waitMs > 0) return { waitMs, seq: undefined };
      const granted = Math.max(1, Number(reply[9] ?? 1));
      const first = seq - granted + 1;
      if (granted > 1) {
        this.dropLease();
        const validMs = Number(reply[10] ?? 0);
        this.lease = {
          count: granted - 1,
          nextSeq: first + 1,
          born,
          until: askedAt + validMs,
          priority: PRIORITY_ARG[priority],
          timer: unref(this.clock.setTimeout(() => this.dropLease(), Math.max(0, askedAt + validMs - this.clock.now()))),
        };
      }
      return { waitMs: 0, seq: first, born };
    } catch (e) {
      // Sent before Redis came back: asked again on the connection there is now, not a reason to leave it.
      if (connection !== this.owner.connections && this.owner.connected) return this.take(priority, view);
      this.fallBack(e, view);
      return this.takeLocally(view);
    }
  }

  /**
   * One of the tokens the last call took beyond its own, while they are valid and for work of
   * the priority they were taken at or higher (lower priority asks Redis, which may hold it back).
   */
  private fromLease(priority: Priority): SharedTake | undefined {
    const lease = this.lease;
    if (!lease) return undefined;
    if (lease.count <= 0 || this.clock.now() >= lease.until) {
      this.dropLease();
      return undefined;
    }
    if (PRIORITY_ARG[priority] < lease.priority) return undefined;
    lease.count--;
    return { waitMs: 0, seq: lease.nextSeq++, born: lease.born };
  }

  /**
   * Ends the lease: its tokens not handed out are never sent, so they go back to the shared
   * bucket (the script adds back only those still outstanding, so a late return cannot count twice).
   */
  dropLease(): void {
    const lease = this.lease;
    if (!lease) return;
    this.lease = undefined;
    this.clock.clearTimeout(lease.timer);
    if (lease.count > 0) this.giveBack({ first: lease.nextSeq, count: lease.count, born: lease.born });
  }

  /**
   * Returns unsent leased tokens; while Redis is away they are kept and returned once it answers
   * (else they count as outstanding until swept, lowering what a fixed window allows).
   */
  private giveBack(unsent: { first: number; count: number; born: number }): void {
    if (this.mode === 'local' || !this.view) {
      this.unreturned.push(unsent);
      if (this.unreturned.length > MAX_UNRETURNED) this.unreturned.shift();
      return;
    }
    this.command(...this.keys, 'return', this.owner.processId, ...limits(this.view), unsent.first, unsent.count, unsent.born).then(
      (reply) => this.absorb(reply),
      () => this.unreturned.push(unsent),
    );
  }

  /** Most tokens one call takes: a tenth of the burst, so no process holds much of a budget others wait for. */
  private maxLease(view: LocalView): number {
    return Math.max(1, Math.min(MAX_LEASE, Math.floor(Math.min(view.burst, this.last?.burst ?? view.burst) / 10)));
  }

  /**
   * Responses that arrive together (one turn of the event loop) go to Redis in one call: the
   * newest news (see `isNewer`), the smallest limit and longest pause of them all, and the other
   * takes as ended. Fewer calls per request where the process is busiest. A take of a budget
   * Redis has lost since is no take of the budget there now: only what it says of the server counts.
   */
  observe(o: SharedObservation): void {
    if (!this.view) return;
    // A take without `born` is taken to be of the budget there now.
    const seq = o.born === undefined || o.born === this.born ? o.seq : undefined;
    if (this.mode === 'local') {
      this.noteEnded(seq, this.born);
      return;
    }
    const batch = this.batch();
    if (o.serverLimit !== undefined) batch.serverLimit = Math.min(o.serverLimit, batch.serverLimit ?? o.serverLimit);
    if (o.pauseMs !== undefined) batch.pauseMs = Math.max(o.pauseMs, batch.pauseMs ?? 0);
    const news = batch.news;
    if (o.remaining !== undefined && seq !== undefined && (news?.seq === undefined || isNewer(o, news))) {
      this.noteEnded(news?.seq, batch.born);
      batch.news = { ...o, seq };
    } else if (seq !== undefined) this.noteEnded(seq, this.born);
    else batch.news ??= { ...o, seq, remaining: undefined };
  }

  private batch() {
    if (!this.observed) {
      this.observed = { born: this.born, news: undefined, serverLimit: undefined, pauseMs: undefined };
      setImmediate(() => this.sendObserved());
    }
    return this.observed;
  }

  /** Keeps the end of take `seq` of the budget born then, unless Redis has lost that one since. */
  private noteEnded(seq: number | undefined, born: number | undefined): void {
    if (seq === undefined || born !== this.born) return;
    if (this.ended.born !== this.born) this.ended = { born: this.born, seqs: [] };
    this.ended.seqs.push(seq);
    if (this.ended.seqs.length > MAX_UNSENT_ENDS) this.ended.seqs.shift();
  }

  private sendObserved(): void {
    const batch = this.observed;
    this.observed = undefined;
    if (!batch || !this.view) return;
    const o = batch.news;
    if (this.mode === 'local') {
      this.noteEnded(o?.seq, batch.born);
      return;
    }
    // Of the budget its takes were of: the script drops them if Redis has lost that one since.
    const born = batch.born;
    const ended = this.ended.born === born ? this.ended.seqs.splice(0) : [];
    const args = [
      'observe',
      this.owner.processId,
      ...limits(this.view),
      batch.serverLimit ?? '',
      o?.remaining ?? '',
      o?.seq ?? '',
      o?.resetInMs ?? '',
      o?.serverModel ?? 'unknown',
      batch.pauseMs ?? '',
      born ?? '',
      ...ended,
    ];
    this.command(...this.keys, ...args).then(
      (reply) => this.absorb(reply),
      () => {
        // An observation is only a hint, but the takes it ended are told with the next one.
        for (const seq of [...(o?.seq === undefined ? [] : [o.seq]), ...ended]) this.noteEnded(seq, born);
      },
    );
  }

  /** Refreshes this process's heartbeat and the list of processes drawing on the budget. */
  beat(): void {
    if (this.mode === 'local' || !this.view) return;
    this.command(...this.keys, 'beat', this.owner.processId, ...limits(this.view)).then(
      (reply) => {
        this.absorb(reply);
        this.processes = reply.slice(9).map(String);
      },
      () => {},
    );
  }

  state(): SharedBudgetState {
    return {
      mode: this.mode,
      limit: this.last?.limit,
      burst: this.last?.burst,
      // Unknown while Redis is away: the local pacing's bucket is this process's, not the budget's.
      tokens: this.mode === 'local' ? undefined : this.last?.tokens,
      processes: this.processes,
      share: this.local.share,
    };
  }

  private absorb(reply: (number | string)[]): [waitMs: number, seq: number, born: number] {
    const [waitMs, seq, limit, burst, milliTokens, processes] = reply.map(Number) as [number, number, number, number, number, number];
    this.last = { limit, burst, tokens: milliTokens / 1000, processes };
    this.born = Number(reply[8]);
    return [waitMs, seq, this.born];
  }

  private fallBack(error: unknown, view: LocalView): void {
    if (this.mode === 'local') return;
    this.mode = 'local';
    const share = Math.max(2, this.last?.processes ?? 2);
    // Starting empty: the shared bucket may have been spent when Redis went away.
    this.local = { tokens: 0, at: this.clock.now(), share };
    this.lastProbe = this.clock.now();
    this.logger.warn(
      { gate: this.gateName, redis: this.owner.where, share, error: describeRedisError(error), limitPerWindow: Math.floor(view.limit / share) },
      `shared rate budget unreachable; pacing locally to 1/${share} of it until Redis answers`,
    );
  }

  private takeLocally(view: LocalView): SharedTake {
    const { share } = this.local;
    const limit = Math.min(view.limit, this.last?.limit ?? view.limit) / share;
    const burst = Math.max(1, Math.min(view.burst, this.last?.burst ?? view.burst) / share);
    const now = this.clock.now();
    const rate = limit / view.windowMs;
    this.local.tokens = Math.min(burst, this.local.tokens + Math.max(0, now - this.local.at) * rate);
    this.local.at = now;
    if (this.local.tokens >= 1) {
      this.local.tokens -= 1;
      return { waitMs: 0, seq: undefined };
    }
    return { waitMs: Math.max(1, Math.ceil((1 - this.local.tokens) / rate)), seq: undefined };
  }

  /** In local mode, asks Redis again at once (its connection is back). */
  rejoin(): void {
    if (this.mode === 'local' && this.view) this.probe(this.view, true);
  }

  /** In local mode, asks Redis again now and then, without making any request wait for it. */
  private probe(view: LocalView, atOnce = false): void {
    const now = this.clock.now();
    if (this.probing || (!atOnce && now - this.lastProbe < this.probeEveryMs)) return;
    this.probing = true;
    this.lastProbe = now;
    const connection = this.owner.connections;
    this.command(...this.keys, 'beat', this.owner.processId, ...limits(view)).then(
      (reply) => {
        this.probing = false;
        this.absorb(reply);
        this.processes = reply.slice(9).map(String);
        this.mode = 'shared';
        if (this.ended.seqs.length > 0) this.batch();
        for (const unsent of this.unreturned.splice(0)) this.giveBack(unsent);
        this.logger.info({ gate: this.gateName, redis: this.owner.where }, 'shared rate budget reachable again; taking from it');
      },
      () => {
        this.probing = false;
        // Redis came back while this probe was out (a rejoin found it probing): ask again now.
        if (connection !== this.owner.connections) this.rejoin();
      },
    );
  }
}

/**
 * Which of two responses of one batch to send as its news: one from a later fixed window (its
 * reset half a second or more later: it may be the first of its window), else the later take.
 */
function isNewer(o: SharedObservation, than: SharedObservation): boolean {
  const window = (x: SharedObservation) => x.resetInMs ?? Number.NEGATIVE_INFINITY;
  if (Math.abs(window(o) - window(than)) >= 500) return window(o) > window(than);
  return (than.seq ?? 0) < (o.seq ?? 0);
}

/** Housekeeping is never what keeps a process alive (a test clock's handle has no `unref`). */
function unref(timer: unknown): unknown {
  (timer as { unref?: () => void } | undefined)?.unref?.();
  return timer;
}

function limits(view: LocalView): [number, number, number] {
  return [view.limit, view.burst, view.windowMs];
}

function positiveMs(name: string, value: number, max: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > max) {
    throw new TypeError(`Expected \`${name}\` to be a number of ms in (0, ${max}], got \`${String(value)}\` (${typeof value})`);
  }
}
