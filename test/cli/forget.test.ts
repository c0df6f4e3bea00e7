import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { consumerParts, orphanedConsumers } from '../../src/cli/forget-command.ts';
import { RunLock, SnapshotStore } from '../../src/store/index.ts';
import { writeConfig } from '../helpers/daemon.ts';
import { tempDbPath } from '../helpers/temp-db.ts';

const forget = (db: string, ...consumers: string[]) =>
  spawnSync(process.execPath, ['bin/indexbot.js', 'forget', ...consumers, '--db', db], { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' });

/** A database a bot kept: a strategy and a sink it still runs, one of each since taken out of its config, a queue for each sink. */
function keptDatabase(): string {
  const db = tempDbPath();
  const store = SnapshotStore.open(db);
  for (const consumer of ['strategy:kept', 'strategy:gone', 'alert:hook', 'alert:hook:strategy-alerts', 'alert:oldhook', 'alert:oldhook:strategy-alerts']) store.setCursor(consumer, 1, 1);
  for (const [i, sink] of ['hook', 'oldhook', 'oldhook'].entries()) store.outbox.enqueue(sink, `e${i}`, i + 1, 1);
  store.outbox.delivered('oldhook', 'e1', 2);
  store.close();
  return db;
}

describe('consumers a bot no longer runs', () => {
  it('are the cursors of strategies and sinks the run does not have, a sink named once', () => {
    const cursors = ['alert:hook', 'alert:hook:strategy-alerts', 'alert:oldhook', 'alert:oldhook:strategy-alerts', 'stream:indexbot:events', 'strategy:gone', 'strategy:kept'];
    expect(orphanedConsumers(cursors, ['kept'], ['hook'])).toEqual(['alert:oldhook', 'strategy:gone']);
    expect(orphanedConsumers(cursors, ['kept', 'gone'], ['hook', 'oldhook'])).toEqual([]);
    expect(consumerParts('alert:oldhook:strategy-alerts')).toEqual({ cursors: ['alert:oldhook', 'alert:oldhook:strategy-alerts'], sink: 'oldhook' });
    expect(consumerParts('stream:indexbot:events')).toBeUndefined();
  });

  it("indexbot forget drops their cursors and a sink's queue, and nothing else (trial 32: no way to, and the database grew for good)", () => {
    const db = keptDatabase();
    const r = forget(db, 'strategy:gone', 'alert:oldhook');
    expect(r.stderr).toBe('');
    expect([r.status, r.stdout]).toEqual([0, 'forgot strategy:gone\nforgot alert:oldhook, and 1 alerts it still owed\n']);
    const store = SnapshotStore.open(db, { readonly: true });
    expect(store.cursors().map((c) => c.consumer)).toEqual(['alert:hook', 'alert:hook:strategy-alerts', 'strategy:kept']);
    expect(store.outbox.summary().map((s) => s.sink)).toEqual(['hook']);
    store.close();
  });

  it("refuses what the config still runs, strategy or sink: the next run would start it again as new, a sink's queue lost (trial 35: dropped without a word)", () => {
    const db = tempDbPath();
    const store = SnapshotStore.open(db);
    for (const consumer of ['strategy:counting', 'alert:hook', 'alert:hook:strategy-alerts', 'strategy:gone']) store.setCursor(consumer, 1, 1);
    store.close();
    const config = writeConfig(db, { db, strategies: { dir: 'test/fixtures/strategies/counting' }, alerts: { sinks: [{ type: 'webhook', name: 'hook', url: 'http://127.0.0.1:9/hook' }] } });
    const run = (...consumers: string[]) => spawnSync(process.execPath, ['bin/indexbot.js', 'forget', ...consumers, '--config', config], { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' });
    const refused = run('strategy:gone', 'strategy:counting', 'alert:hook');
    expect([refused.status, refused.stderr]).toEqual([
      64,
      'indexbot: forget: the config still runs strategy:counting, alert:hook: a run would start them again as new, skipping what they had not read; take them out of the config first [USAGE_INVALID]\n',
    ]);
    const ok = run('strategy:gone');
    expect([ok.status, ok.stdout]).toEqual([0, 'forgot strategy:gone\n']);
  });

  it('still refuses a sink whose secret this shell lacks, and a strategy beside one that fails to load (the review: either emptied its whole check)', () => {
    const project = mkdtempSync(join(tmpdir(), 'indexbot-forget-'));
    mkdirSync(join(project, 'node_modules'));
    symlinkSync(resolve('.'), join(project, 'node_modules', 'indexbot'), 'dir');
    mkdirSync(join(project, 'strategies'));
    writeFileSync(join(project, 'strategies', 'package.json'), JSON.stringify({ type: 'module' }));
    writeFileSync(join(project, 'strategies', 'kept.ts'), "import { defineStrategy } from 'indexbot';\nexport default defineStrategy({ name: 'kept', on: {} });\n");
    writeFileSync(join(project, 'strategies', 'broken.ts'), "import { defineStrategy } from 'indexbot';\nexport default defineStrategy({ name: 'broken', on: { , } });\n");
    const db = join(project, 'bot.db');
    const store = SnapshotStore.open(db);
    for (const consumer of ['strategy:kept', 'alert:tg', 'alert:tg:strategy-alerts']) store.setCursor(consumer, 1, 1);
    store.close();
    const config = writeConfig(db, {
      db,
      strategies: { dir: join(project, 'strategies') },
      alerts: { sinks: [{ type: 'telegram', name: 'tg', botToken: 'env:INDEXBOT_TEST_UNSET_TOKEN', chatId: 1 }] },
    });
    const run = (consumer: string) => spawnSync(process.execPath, ['bin/indexbot.js', 'forget', consumer, '--config', config], { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' });
    for (const consumer of ['strategy:kept', 'alert:tg']) {
      const r = run(consumer);
      expect([r.status, r.stderr], consumer).toEqual([
        64,
        `indexbot: forget: the config still runs ${consumer}: a run would start it again as new, skipping what it had not read; take it out of the config first [USAGE_INVALID]\n`,
      ]);
    }
  });

  it('refuses a name that is no such consumer (64), one the database lacks (64), and a database a bot runs on (78), changing nothing', () => {
    const db = keptDatabase();
    const bad = forget(db, 'stream:indexbot:events');
    expect([bad.status, bad.stderr]).toEqual([
      64,
      'indexbot: forget: "stream:indexbot:events" is no strategy or alert sink consumer; name one as status lists it, such as strategy:NAME or alert:SINK [USAGE_INVALID]\n',
    ]);
    const missing = forget(db, 'strategy:nosuch');
    expect(missing.status).toBe(64);
    expect(missing.stderr).toMatch(/^indexbot: forget: .* has no cursor for strategy:nosuch \(it has: alert:hook, .*strategy:kept\) \[USAGE_INVALID\]\n$/);
    const lock = RunLock.acquire(db);
    try {
      const held = forget(db, 'strategy:gone');
      expect(held.status).toBe(78);
      expect(held.stderr).toMatch(/already running on .*; stop it first: a running bot keeps the cursors of what it runs \[STORE_LOCKED\]\n$/);
    } finally {
      lock.release();
    }
    const store = SnapshotStore.open(db, { readonly: true });
    expect(store.cursors()).toHaveLength(6);
    store.close();
  });
});
