import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { isStrategyAlertConsumer } from '../alerts/index.ts';
import { type ConfigFlags, DEFAULT_READY_MAX_AGE_S, httpToken, loadConfig } from '../config/index.ts';
import { ConfigError, IndexbotError, StoreError, plainText, toNumber, valueAt } from '../core/index.ts';
import type { BudgetPlan } from '../poller/index.ts';
import type { RateGateState, SharedBudgetState } from '../ratelimit/index.ts';
import { HTTP_FACE, type HttpFaceRecord, RunLock, SnapshotStore, isRunning } from '../store/index.ts';
import { EVENT_STREAM, STALE_READ_S, STREAM_HEARTBEAT, STREAM_MISSED, type StreamHeartbeat, type StreamMissed, lastHeartbeat, publishedCursor, unpublishedEvents } from '../stream/index.ts';
import { instrumentLabel, parseInstrument, pausedStrategies } from '../strategy/index.ts';
import { faceAt, getFromDaemon } from './daemon-control.ts';
import { intOption, withConfigFlags } from './options.ts';

interface StatusFlags extends ConfigFlags {
  url?: string;
  json?: boolean;
  check?: boolean;
  maxAgeS?: number;
}

/** Everything `status` reports, as `--json` prints it. */
export function collectStatus(store: SnapshotStore, now: number) {
  const runtime = store.runtime<{ gates: RateGateState[]; schedule: { job: string; intervalMs: number; nextDueAt: number; failures: number }[]; pid: number }>('gates');
  const budget = store.runtime<BudgetPlan>('budget');
  const beat = lastHeartbeat(store);
  // A runner's (--role strategies) event stream: its group, lag and pending at its last read.
  const streamRead = store.runtime<StreamHeartbeat>(STREAM_HEARTBEAT);
  const missed = store.runtime<StreamMissed>(STREAM_MISSED)?.value;
  const history = store.historySpans();
  const ageS = (at: number) => Math.round((now - at) / 1000);
  const polled = budget && new Set(budget.value.jobs.flatMap((j) => (j.indexId === undefined ? [] : [j.indexId])));
  return {
    heartbeat:
      beat === null
        ? null
        : beat.source === 'poll'
          ? { lastSuccessfulPollAt: new Date(beat.at).toISOString(), ageS: ageS(beat.at) }
          : { lastStreamReadAt: new Date(beat.at).toISOString(), ageS: ageS(beat.at) },
    eventStream: streamRead
      ? {
          ...streamRead.value,
          lastReadAgeS: ageS(streamRead.updatedAt),
          running: streamRead.value.pid === undefined ? null : isRunning(streamRead.value.pid),
          // Events the stream had lost before this runner read them: never seen by its strategies.
          missed: missed ? { events: missed.events, lastFrom: missed.last.from, lastTo: missed.last.to, lastAgeS: ageS(missed.last.at) } : null,
        }
      : null,
    // A collector's publishing: what its runners have not been sent yet (Redis away).
    publishing: publishingStatus(store),
    // The daemon (or runner) holding this database's lock now, if one does.
    daemon: daemonStatus(store),
    db: store.path,
    schemaVersion: store.schemaVersion,
    now: new Date(now).toISOString(),
    indexes: store.indexCacheSummaries().map((i) => ({
      ...i,
      history: history.get(i.indexId) ?? [],
      compositionAgeS: i.compositionFetchedAt === null ? null : Math.round((now - i.compositionFetchedAt) / 1000),
      // Whether the last run's poll plan holds it (null: no run planned any): one dropped from the config ages in the cache without a poll failing.
      polled: polled === undefined ? null : polled.has(i.indexId),
    })),
    jobs: store.jobStates().map((j) => ({ ...j, lastSuccessAgeS: j.lastSuccessAt === null ? null : Math.round((now - j.lastSuccessAt) / 1000) })),
    snapshots: store.snapshotCounts(),
    events: store.eventCounts(),
    lastEventSeq: store.lastEventSeq(),
    cursors: store.cursors(),
    budget: budget && {
      requestedPerMin: budget.value.requestedPerMin,
      plannedPerMin: budget.value.plannedPerMin,
      budgetPerMin: budget.value.budgetPerMin,
      stretched: budget.value.stretched,
    },
    strategies: strategyStatus(store),
    alerts: store.outbox.summary().map((a) => ({ ...a, oldestPendingAgeS: a.oldestPendingAt === null ? null : Math.round((now - a.oldestPendingAt) / 1000) })),
    rateGates: runtime?.value.gates ?? [],
    reportedAt: runtime ? new Date(runtime.updatedAt).toISOString() : null,
    // The gates are the last report of a process on this host: gone, they describe the past.
    reporter: runtime ? { pid: runtime.value.pid, running: isRunning(runtime.value.pid) } : null,
  };
}

/** Each strategy's paper account valued at the latest prices the cache holds. */
export function strategyStatus(store: SnapshotStore) {
  const t = store.strategies;
  const latest = Number.MAX_SAFE_INTEGER;
  const paused = new Set(pausedStrategies(store));
  return t.accounts().map((a) => {
    const name = a.account.replace(/^strategy:/, '');
    // Valued exactly, by the ledger's rule (core/money.ts), then shown as numbers.
    let equity = a.cash;
    const positions = t.positions(a.account).map((p) => {
      const i = parseInstrument(p.instrument);
      const price = i.kind === 'index' ? store.navAt(i.indexId, latest)?.nav : store.tokenPriceAt(i.address, latest)?.priceUsd;
      const label = instrumentLabel(store, p.instrument);
      const value = price === undefined ? undefined : valueAt(p.quantity, price);
      equity = equity.plus(value ?? p.costUsd);
      return { instrument: p.instrument, quantity: toNumber(p.quantity), costUsd: toNumber(p.costUsd), label, price: price ?? null, valueUsd: value === undefined ? null : toNumber(value) };
    });
    return {
      strategy: name,
      cursor: store.cursor(`strategy:${name}`),
      parked: t.parked(name).length,
      paused: paused.has(name),
      fills: t.fillCount(a.account),
      alerts: t.alertCount(name),
      cash: toNumber(a.cash),
      initialCash: toNumber(a.initialCash),
      equity: toNumber(equity),
      pnlUsd: toNumber(equity.minus(a.initialCash)),
      positions,
    };
  });
}

export function registerStatusCommand(program: Command): void {
  withConfigFlags(program.command('status').description('what the cache holds, the last poll of each job, events, strategies, budget and rate gates'), 'config', 'db')
    .option('--json', 'print JSON for scripts', false)
    .option('--check', 'for monitoring: exit 1 when no process holds the database, or its last successful poll is older than --max-age-s', false)
    .option('--max-age-s <s>', `heartbeat age that --check calls stale (default the running process's http.readyMaxAgeS, as /readyz, else ${DEFAULT_READY_MAX_AGE_S})`, intOption(1, 365 * 86_400))
    .option('--url <url>', "read a running daemon's HTTP face instead of a database, such as http://127.0.0.1:9464 (token: http.token, or INDEXBOT_HTTP_TOKEN)")
    .action(async (flags: StatusFlags) => {
      if (flags.url !== undefined) {
        // Watched from elsewhere: what the daemon answers is what it would print on its own machine.
        const face = faceAt(flags.url, httpToken(flags, process.env));
        report(await getFromDaemon<Status>(face, '/api/v1/status'), flags, ` --url ${face.url}`);
        return;
      }
      // A script (--json) is refused too, as a health check is: it would parse another bot's status, with exit 0 (trial 26).
      const db = flags.db ?? process.env.INDEXBOT_DB ?? tryConfigDb(flags, flags.check === true || flags.json === true) ?? 'data/indexbot.db';
      if (!existsSync(db)) {
        // A health check's answer, not a configuration error: a monitor reading 0 or 1 took 78 for "unknown" (trial 35), on a fresh volume or a wrong path alike.
        if (flags.check) {
          checkResult(false, `stale: no database at ${db}: no bot has run on it`, flags);
          return;
        }
        throw new StoreError(`no database at ${db}: run \`indexbot run\` first, or pass --db`, 'STORE_UNAVAILABLE');
      }
      let store: SnapshotStore;
      try {
        store = SnapshotStore.open(db, { readonly: true });
      } catch (e) {
        // Not a healthy bot's database either (another program's, a newer schema's, damaged): a monitor reads 1 and the reason (trial 36: 78, and no JSON for --json).
        if (flags.check && e instanceof StoreError) {
          checkResult(false, `unreadable: ${e.message} [${e.code}]`, flags);
          return;
        }
        throw e;
      }
      try {
        // A command it advises names what this status was read from: without them it would read another database.
        report(collectStatus(store, Date.now()), flags, [flags.config === undefined ? '' : ` --config ${flags.config}`, ` --db ${db}`].join(''));
      } finally {
        store.close();
      }
    });
}

type Status = ReturnType<typeof collectStatus>;

/** The health check's answer: its line, or with --json an object a monitor parses (trial 35: --json was dropped without a word), and exit 0 or 1. */
function checkResult(ok: boolean, line: string, flags: StatusFlags): void {
  process.stdout.write(flags.json ? `${JSON.stringify({ ok, line })}\n` : `${line}\n`);
  process.exitCode = ok ? 0 : 1;
}

/** Prints a status as the flags ask: the health check's line and exit code, JSON, or text. */
function report(status: Status, flags: StatusFlags, commandArgs: string): void {
  if (flags.check) {
    const beat = status.heartbeat;
    // The limit /readyz applies in the same process: the two checks of one bot agree (trial 33: ok beside a 503).
    const maxAgeS = flags.maxAgeS ?? status.daemon.readyMaxAgeS ?? DEFAULT_READY_MAX_AGE_S;
    const fresh = beat !== null && beat.ageS <= maxAgeS;
    const what = beat === null ? 'no successful poll nor event-stream read yet' : `${'lastStreamReadAt' in beat ? 'last event-stream read' : 'last successful poll'} ${beat.ageS}s ago`;
    // A bot that stopped (exit 78, which no supervisor restarts) is down now, not when its last poll ages past the limit (trial 32: "ok" for 300 s).
    const stopped = status.daemon.pid === null;
    checkResult(fresh && !stopped, stopped ? `stale: no indexbot process holds ${status.db}; ${what}` : fresh ? `ok: ${what}` : `stale: ${what} (limit ${maxAgeS}s)`, flags);
  } else if (flags.json) process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
  else process.stdout.write(render(status, commandArgs));
}

/**
 * The database the config names. A broken config does not stop `status` (it is how one looks
 * at a bot whose config an edit broke), but one named by --config or INDEXBOT_CONFIG is said
 * to be broken, on one line, before the default database is shown instead. A health check or
 * a script (`strict`) is refused: on the default database, it would read another bot's.
 */
function tryConfigDb(flags: ConfigFlags, strict: boolean): string | undefined {
  try {
    return loadConfig(flags, process.env, { server: false, services: false }).db;
  } catch (e) {
    if (strict && e instanceof IndexbotError) {
      throw new ConfigError(`${e.message}; status cannot tell which database to read: fix it, or name the database with --db`);
    }
    if ((flags.config ?? process.env.INDEXBOT_CONFIG) !== undefined && e instanceof Error) {
      process.stderr.write(`indexbot: ${plainText(e.message)}; showing the default database instead\n`);
    }
    return undefined;
  }
}

const age = (s: number | null) => (s === null ? 'never' : s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`);

function render(s: Status, commandArgs: string): string {
  const beat = s.heartbeat
    ? `heartbeat: ${'lastStreamReadAt' in s.heartbeat ? 'last event-stream read' : 'last successful poll'} ${age(s.heartbeat.ageS)}`
    : 'heartbeat: no successful poll nor event-stream read yet';
  const daemon = s.daemon.pid === null ? 'daemon: none running on this database' : `daemon: running (pid ${s.daemon.pid})`;
  const lines: string[] = [`indexbot status  db ${s.db} (schema v${s.schemaVersion})  ${s.now}`, daemon, beat, ''];
  lines.push('Indexes (cache)');
  for (const i of s.indexes) {
    const asOf = i.compositionAsOf === null ? '' : ` (as of ${new Date(i.compositionAsOf).toISOString().slice(0, 16)})`;
    const at = (t: number) => new Date(t).toISOString().slice(0, 16);
    // An older daemon's status (--url) has the one count over every interval.
    const history =
      i.history === undefined
        ? `history ${String(i.historyPoints).padStart(6)}${i.historyFirst === null ? '' : ` (${at(i.historyFirst)} .. ${at(i.historyLast!)})`}`
        : i.history.length === 0
          ? 'history      0'
          : i.history.map((h) => `history ${h.interval} ${String(h.points).padStart(6)} (${at(h.first)} .. ${at(h.last)}${h.missing > 0 ? `, ${h.missing} missing` : ''})`).join('  ');
    lines.push(
      `  ${i.indexId.padEnd(10)} composition fetched ${age(i.compositionAgeS).padEnd(9)}${asOf}  snapshots ${String(i.compositionSnapshots).padStart(5)}  perf ${String(i.performancePoints).padStart(5)}  ${history}  rebalances ${i.rebalances}${i.polled === false ? '  (not polled by the last run)' : ''}`,
    );
  }
  if (s.eventStream) {
    const e = s.eventStream;
    lines.push('', 'Event stream (a runner)', `  ${e.stream}  group ${e.group}  lag ${e.lag ?? '?'}  pending ${e.pending ?? '?'}  last read ${age(e.lastReadAgeS)}`);
    // Its lag does not move once it stopped, while the stream goes on growing.
    if (e.running === false) lines.push(`  its runner (pid ${e.pid}) is no longer running: lag and pending are as of its last read`);
    // A read is answered every second or so: one this old means Redis is away or the runner stuck, and the stream has moved on (trial 33: "lag 0" beside a lag of 14).
    else if (e.lastReadAgeS > STALE_READ_S) lines.push(`  lag and pending are as of that read, ${age(e.lastReadAgeS)}: Redis away, or the runner stuck`);
    if (e.missed) {
      lines.push(
        `  MISSED ${e.missed.events} event(s) the stream no longer held when this runner read that far (last: the collector's ${e.missed.lastFrom}..${e.missed.lastTo}, ${age(e.missed.lastAgeS)})`,
      );
    }
  }
  if (s.publishing) {
    const p = s.publishing;
    lines.push(
      '',
      'Event stream (a collector)',
      `  ${p.stream}  published through seq ${p.publishedSeq}  unpublished ${p.unpublished}${p.unpublished > 0 ? ' (its runners see none of them until they are)' : ''}`,
    );
  }
  lines.push('', 'Poll jobs');
  // A runner polls nothing: its collector's polls come with the stream (trial 33: an empty heading).
  if (s.jobs.length === 0) lines.push(s.eventStream ? "  none here: a runner's data comes with the stream, fetched by its collector (composition fetched, above)" : '  none yet');
  for (const j of s.jobs) {
    const failing = j.consecutiveFailures > 0 ? `  FAILING x${j.consecutiveFailures}: ${j.lastError}` : '';
    lines.push(`  ${j.job.padEnd(26)} last success ${age(j.lastSuccessAgeS)}${failing}`);
  }
  lines.push('', `Events (last seq ${s.lastEventSeq})`);
  for (const [type, count] of Object.entries(s.events)) lines.push(`  ${type.padEnd(22)} ${count}`);
  lines.push('', 'Consumer cursors');
  if (s.cursors.length === 0) lines.push('  none');
  const width = Math.max(26, ...s.cursors.map((c) => c.consumer.length));
  for (const c of s.cursors) lines.push(`  ${c.consumer.padEnd(width)} at ${isStrategyAlertConsumer(c.consumer) ? 'alert' : 'seq'} ${c.seq}`);
  lines.push('', 'Strategies (paper accounts at the latest cached prices)');
  if (s.strategies.length === 0) lines.push('  none');
  for (const st of s.strategies) {
    const parked = `${st.paused ? '  PAUSED' : ''}${st.parked > 0 ? `  PARKED ${st.parked} (${retryHint(st.strategy, s.daemon, commandArgs)})` : ''}`;
    lines.push(
      `  ${st.strategy.padEnd(22)} seq ${st.cursor}  equity ${st.equity.toFixed(2)}  P&L ${st.pnlUsd >= 0 ? '+' : ''}${st.pnlUsd.toFixed(2)} USD  cash ${st.cash.toFixed(2)}  fills ${st.fills}  alerts ${st.alerts}${parked}`,
    );
    for (const p of st.positions) {
      lines.push(`    ${p.label.padEnd(10)} qty ${p.quantity.toPrecision(6)}  cost ${p.costUsd.toFixed(2)}  value ${p.valueUsd === null ? 'n/a' : p.valueUsd.toFixed(2)}`);
    }
  }
  lines.push('', 'Alert sinks (outbox)');
  if (s.alerts.length === 0) lines.push('  none');
  for (const a of s.alerts) {
    const backlog = a.pending > 0 ? `  oldest pending ${a.oldestPendingAgeS} s${a.lastError ? ` (last error: ${a.lastError})` : ''}` : '';
    const gaveUp = a.givenUp > 0 ? `  GAVE UP ${a.givenUp}: ${a.lastGiveUpError}` : '';
    lines.push(`  ${a.sink.padEnd(16)} delivered ${a.delivered}  pending ${a.pending}${backlog}${gaveUp}`);
  }
  if (s.budget) {
    lines.push('', `Budget: ${s.budget.plannedPerMin.toFixed(1)} req/min planned of ${s.budget.budgetPerMin.toFixed(1)} (asked ${s.budget.requestedPerMin.toFixed(1)})`);
    for (const st of s.budget.stretched) lines.push(`  stretched ${st.name}: ${st.fromMs / 1000}s -> ${st.toMs / 1000}s`);
  }
  // A runner has no client, hence no gates: no empty heading.
  const gone = s.reporter !== null && !s.reporter.running;
  if (s.rateGates.length > 0 || s.reportedAt) {
    lines.push('', `Rate gates${s.reportedAt ? ` (reported ${s.reportedAt}${gone ? ` by pid ${s.reporter!.pid}, which is no longer running` : ''})` : ''}`);
    // A gate is made at a credential's first request: reported before it, the heading stood alone (trial 30).
    if (s.rateGates.length === 0) lines.push('  none yet: no request had been sent');
  }
  for (const g of s.rateGates) {
    lines.push(
      `  ${g.name.padEnd(16)} limit ${g.limit}/${g.windowMs / 1000}s  burst ${g.burst}  tokens ${g.tokens}  remaining ${g.remaining ?? '?'}  queued ${g.queued}  sent ${g.sent}  429s ${g.rateLimited}${g.pausedUntil ? `  paused until ${new Date(g.pausedUntil).toISOString()}` : ''}`,
    );
    if (g.shared) lines.push(`    ${describeShared(g.shared, gone)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Where a collector's publishing stands, when this database has published to the event stream. */
function publishingStatus(store: SnapshotStore): { stream: string; publishedSeq: number; unpublished: number } | null {
  const cursor = store.cursors().find((c) => c.consumer === publishedCursor());
  return cursor ? { stream: EVENT_STREAM, publishedSeq: cursor.seq, unpublished: unpublishedEvents(store) } : null;
}

/** The process holding this database's lock, and its HTTP face as it recorded it at its start (an older indexbot's records none). */
function daemonStatus(store: SnapshotStore): { pid: number | null; http?: { url: string | null; token: boolean }; readyMaxAgeS?: number } {
  const pid = RunLock.holder(store.path) ?? null;
  const face = store.runtime<HttpFaceRecord>(HTTP_FACE)?.value;
  return pid !== null && face?.pid === pid ? { pid, http: { url: face.url, token: face.token }, readyMaxAgeS: face.readyMaxAgeS } : { pid };
}

/** How to retry a strategy's parked events: the command takes the database's lock, so while a process holds it, through that process. */
function retryHint(strategy: string, daemon: ReturnType<typeof daemonStatus>, commandArgs: string): string {
  const command = `indexbot strategies retry ${strategy}${commandArgs}`;
  if (daemon.pid === null) return command;
  if (daemon.http?.url === null) return `pid ${daemon.pid} runs on this database with no --http face: stop it and run ${command}, or restart it with --http to retry while it runs`;
  if (daemon.http === undefined) return `pid ${daemon.pid} runs on this database: POST /api/v1/strategies/${encodeURIComponent(strategy)}/retry on its --http face, or stop it and run ${command}`;
  // The command goes through the HTTP face the process recorded (with the config's http.token).
  return `${command}: through pid ${daemon.pid}'s HTTP face at ${daemon.http.url}`;
}

/** The budget a gate shares with other processes through Redis, and who draws on it. */
function describeShared(b: SharedBudgetState, gone: boolean): string {
  const who = (when: string) => `${b.processes.length} process${b.processes.length === 1 ? '' : 'es'} ${when}${b.processes.length > 0 ? `: ${b.processes.join(', ')}` : ''}`;
  // Unreachable, the list is what Redis last said: not "the last minute" any more.
  if (b.mode === 'local') return `shared budget: Redis unreachable, pacing to 1/${b.share} of it locally; ${who('when Redis last answered')}`;
  return `shared budget (Redis): limit ${b.limit ?? '?'}  burst ${b.burst ?? '?'}  tokens ${b.tokens ?? '?'}; ${who(gone ? 'in the minute before that report' : 'in the last minute')}`;
}
