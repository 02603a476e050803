import { expect, it, vi } from 'vitest';
import type { JournalEntry } from '../../src/journal/journal-entry.js';
import { runEvents } from '../../src/engine/read/run-events.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { settle, useFakeTimers } from './harness.js';
import { startRun, step } from '../conformance/harness.js';

/*
 * Idle StreamRunEvents cost nothing while nothing happens (issue 29 item 6): a stream that has
 * caught up waits on the store's wake-ups, not on a timer per stream that reads the journal. The
 * clock is faked, so "idle for 10 s" is exact and no test sleeps: we count the journal reads N
 * idle streams issue over the window, which must not grow with N (it was N per second).
 */

useFakeTimers();

async function idleReads(n: number): Promise<{ reads: number; delivered: number }> {
  const store = new MemoryStore();
  const { run, lease } = await startRun(store);
  await store.journalAppend({ lease, entries: [step('before')] });
  let reads = 0;
  const list = store.journalList.bind(store);
  store.journalList = (params) => {
    reads += 1;
    return list(params);
  };
  const abort = new AbortController();
  const seen: JournalEntry[][] = [];
  const streams = Array.from({ length: n }, async (_, i) => {
    seen[i] = [];
    for await (const entry of runEvents({ store, runId: run.id, namespace: 'default', afterSeq: 0, followSuspended: true, signal: abort.signal })) {
      seen[i]!.push(entry);
    }
  });
  await settle(); // every stream subscribes and catches up once
  const caughtUp = reads;
  await vi.advanceTimersByTimeAsync(10_000);
  const idle = reads - caughtUp;
  // Still live: one append reaches every stream through the wake-up alone.
  await store.journalAppend({ lease, entries: [step('after')] });
  await settle();
  const delivered = seen.filter((s) => s.map((e) => e.name).join() === 'after').length;
  abort.abort();
  await Promise.all(streams);
  return { reads: idle, delivered };
}

it('1 and 200 idle streams issue no journal reads over 10 s, and each still gets the next entry at once', async () => {
  const one = await idleReads(1);
  const many = await idleReads(200);
  expect(one).toEqual({ reads: 0, delivered: 1 });
  expect(many).toEqual({ reads: 0, delivered: 200 });
});
