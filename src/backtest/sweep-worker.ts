/** A sweep's worker thread: takes jobs from the counter it shares with the other threads, runs them one at a time, and sends each result back. */
import { parentPort } from 'node:worker_threads';
import { IndexbotError } from '../core/index.ts';
import { type SweepWork, SweepThread, type WorkerReply } from './sweep.ts';

parentPort!.once('message', async (work: SweepWork) => {
  const next = new Int32Array(work.next);
  const thread = new SweepThread(work.db, work.historyBudgetBytes);
  try {
    for (let index = Atomics.add(next, 0, 1); index < work.jobs.length; index = Atomics.add(next, 0, 1)) {
      let reply: WorkerReply;
      try {
        reply = { index, ok: true, result: await thread.run(work.settings, work.jobs[index]!, work.output) };
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
  } finally {
    thread.close();
  }
  parentPort!.postMessage({ index: null } satisfies WorkerReply);
});
