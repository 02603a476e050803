import { once } from 'node:events';
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newEntry, type JournalEntry } from '../../src/journal/journal-entry.js';
import { journalFollow } from '../../src/store/journal-follow.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';

/*
 * LISTEN/NOTIFY loses notifications while the listener is disconnected (reliability.md E6). The
 * follower must still see everything: the listener reconnects, re-LISTENs and wakes every
 * subscriber once, and the follower catches up from its own cursor.
 */

let db: MigratedDatabase;
let admin: pg.Pool;

beforeAll(async () => {
  db = await createMigratedDatabase();
  admin = db.admin;
});

afterAll(async () => {
  await db?.drop();
});

it('a follower whose LISTEN connection is killed sees all 100 entries appended meanwhile, in order, once', async () => {
  // The reconnect waits at least 1 s, so all 100 appends (and their NOTIFYs) fall into the outage.
  const follower = await PostgresStore.connect({ url: db.url, applicationName: 'follower', listenerBackoffMs: { min: 2_000, max: 2_000 } });
  const writer = await PostgresStore.connect({ url: db.url, applicationName: 'writer' });
  const abort = new AbortController();
  try {
    const { lease } = await writer.runCreate({
      namespace: 'default', workflowName: 'w', workflowVersion: '1', workflowDigest: 'd', input: null,
      leaseFor: { holder: 'writer', ttlMs: 60_000 },
    });
    const runId = lease!.runId;
    const seen: JournalEntry[] = [];
    const waiter = { check: () => {} };
    const seenCount = (n: number) => new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`follower saw ${seen.length} of ${n} entries`)), 20_000);
      waiter.check = () => {
        if (seen.length >= n) {
          clearTimeout(timer);
          resolve();
        }
      };
      waiter.check();
    });
    // pollMs far beyond the test timeout: only wake-ups can move this follower.
    const following = (async () => {
      for await (const entry of journalFollow({ store: follower, runId, signal: abort.signal, pollMs: 600_000 })) {
        seen.push(entry);
        waiter.check();
      }
    })();

    await writer.journalAppend({ lease: lease!, entries: [newEntry({ kind: 'step', name: 'before', status: 'ok' })] });
    await seenCount(1); // the follower is subscribed and caught up

    const lost = once(follower.listener, 'lost');
    const reconnected = once(follower.listener, 'connected');
    const killed = await admin.query<{ ok: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
       WHERE datname = current_database() AND application_name = 'follower:listen'`);
    expect(killed.rows).toEqual([{ ok: true }]);
    await lost;

    for (let i = 0; i < 100; i++) {
      await writer.journalAppend({ lease: lease!, entries: [newEntry({ kind: 'step', name: `during-${i}`, status: 'ok' })] });
    }
    expect(seen).toHaveLength(1); // every NOTIFY of those 100 went nowhere

    await reconnected;
    await seenCount(101);
    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: 101 }, (_, i) => i));
    expect(seen.slice(1).map((e) => e.name)).toEqual(Array.from({ length: 100 }, (_, i) => `during-${i}`));

    // And after the reconnect, live NOTIFYs wake it again.
    await writer.journalAppend({ lease: lease!, entries: [newEntry({ kind: 'step', name: 'after', status: 'ok' })] });
    await seenCount(102);
    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: 102 }, (_, i) => i));
    abort.abort();
    await following;
  } finally {
    abort.abort();
    await follower.close();
    await writer.close();
  }
});

it('a subscriber that follows every run gets onResync after a reconnect', async () => {
  const store = await PostgresStore.connect({ url: db.url, applicationName: 'resync', listenerBackoffMs: { min: 10, max: 50 } });
  try {
    let resyncs = 0;
    let pendings = 0;
    let markResynced!: () => void;
    const resynced = new Promise<void>((resolve) => { markResynced = resolve; });
    await store.wakeupSubscribe({ onResync: () => { resyncs += 1; markResynced(); }, onPending: () => { pendings += 1; } });
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'resync:listen'`);
    await resynced;
    expect(resyncs).toBe(1);
    expect(pendings).toBe(1);
  } finally {
    await store.close();
  }
});
