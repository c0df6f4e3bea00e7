/** A sweep's worker thread: takes jobs from the counter it shares with the other threads, runs them one at a time, and sends each result back. */
import { parentPort } from 'node:worker_threads';
import { IndexbotError, type Logger } from '../core/index.ts';
import { SnapshotStore } from '../store/index.ts';
import { recordMoments } from './recorded-history.ts';
import type { LogLine, PieceRead, WorkerMessage, WorkerReply } from './sweep-pool.ts';
import { type StrategyModules, SweepThread, preloadStrategies } from './sweep.ts';

/** Each line goes to the sweep's logger on the main thread, as plain data (what a message can carry). */
function forwardingLogger(bindings: Record<string, unknown>): Logger {
  const at = (level: LogLine['level']) => (obj: object, msg?: string) => {
    parentPort!.postMessage({ log: { level, obj: plainData({ ...bindings, ...obj }), msg } } satisfies WorkerReply);
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => forwardingLogger({ ...bindings, ...more }) };
}

/** An object as JSON would carry it, errors with their name, message and stack: a function or a class instance in a log object cannot be posted. */
function plainData(obj: object): object {
  try {
    return JSON.parse(
      JSON.stringify(obj, (_key, value: unknown) => (value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : typeof value === 'bigint' ? value.toString() : value)),
    ) as object;
  } catch (e) {
    // A cycle, say: the line still goes out, saying why its fields do not.
    return { unloggable: (e as Error).message };
  }
}

/** The strategy files this thread loaded, for every sweep of its session. */
const modules: StrategyModules = new Map();

/** The thread of the history the last sweep replayed: the next sweep of the session mostly replays it again. */
let current: { id: number; thread: SweepThread } | undefined;

function readPiece(p: PieceRead): WorkerReply {
  try {
    const cache = SnapshotStore.open(p.db, { readonly: true });
    try {
      return { piece: recordMoments(cache, p.indexIds, p.interval, p.from, p.to, p.budget) };
    } finally {
      cache.close();
    }
  } catch (e) {
    return { pieceFailed: e instanceof Error ? e.message : String(e) };
  }
}

parentPort!.on('message', async (message: WorkerMessage) => {
  if ('load' in message) {
    preloadStrategies(modules, message.load);
    return;
  }
  if ('read' in message) {
    parentPort!.postMessage(readPiece(message.read));
    return;
  }
  if ('forget' in message) {
    current?.thread.close();
    current = undefined;
    return;
  }
  const work = message;
  if (current?.id !== work.history.id) {
    current?.thread.close();
    current = { id: work.history.id, thread: new SweepThread(work.db, work.history.data!, modules) };
  }
  const { thread } = current;
  const next = new Int32Array(work.next);
  for (let index = Atomics.add(next, 0, 1); index < work.jobs.length; index = Atomics.add(next, 0, 1)) {
    let reply: WorkerReply;
    try {
      reply = { index, ok: true, result: await thread.run(work.settings, work.jobs[index]!, index, work.output, forwardingLogger({}), work.range) };
    } catch (e) {
      const error = e instanceof Error ? e : new Error(String(e));
      parentPort!.postMessage({
        index,
        ok: false,
        name: error.name,
        message: error.message,
        code: e instanceof IndexbotError ? e.code : undefined,
        kind: e instanceof IndexbotError ? e.kind : undefined,
        stack: error.stack,
      } satisfies WorkerReply);
      return;
    }
    parentPort!.postMessage(reply);
  }
  parentPort!.postMessage({ index: null } satisfies WorkerReply);
});

// The session hands this thread pieces of a history to read from now on, while it reads others itself.
parentPort!.postMessage({ started: true } satisfies WorkerReply);
