/** A sweep's worker thread: runs the backtests it is sent, one at a time, and sends each result back. */
import { parentPort } from 'node:worker_threads';
import { IndexbotError } from '../core/index.ts';
import { type SweepJob, type SweepSettings, type WorkerReply, runJob } from './sweep.ts';

parentPort!.on('message', async (m: { db: string; settings: SweepSettings; job: SweepJob }) => {
  let reply: WorkerReply;
  try {
    reply = { ok: true, result: await runJob(m.db, m.settings, m.job) };
  } catch (e) {
    const error = e instanceof Error ? e : new Error(String(e));
    reply = { ok: false, name: error.name, message: error.message, code: e instanceof IndexbotError ? e.code : undefined, kind: e instanceof IndexbotError ? e.kind : undefined, stack: error.stack };
  }
  parentPort!.postMessage(reply);
});
