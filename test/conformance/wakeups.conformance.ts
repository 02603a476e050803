import { expect, it } from 'vitest';
import type { JournalEntry } from '../../src/journal/journal-entry.js';
import { journalFollow } from '../../src/store/journal-follow.js';
import { nextCall, resolution, runParams, startRun, step, suspension } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

export function wakeupsSection({ h }: SuiteContext): void {
  it('wakes a run subscriber on append and status change, and only for its run', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    const other = await startRun(store);
    const woken: string[] = [];
    let call = nextCall<string>();
    const unsubscribe = await store.wakeupSubscribe({ runId: run.id, onRun: (id) => { woken.push(id); call.fire(id); } });
    await store.journalAppend({ lease: other.lease, entries: [step('elsewhere')] });
    await store.journalAppend({ lease, entries: [step('here')] });
    expect(await call.promise).toBe(run.id);
    call = nextCall<string>();
    await store.runStatusSet({ lease, status: 'SUCCEEDED' });
    expect(await call.promise).toBe(run.id);
    await unsubscribe();
    expect(woken.every((id) => id === run.id)).toBe(true);
  });

  it('wakes pending subscribers when a run becomes claimable: created, resolved, released', async () => {
    const { store } = h();
    let call = nextCall();
    const unsubscribe = await store.wakeupSubscribe({ onPending: () => call.fire() });
    await store.runCreate(runParams());
    await call.promise;

    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [suspension('wait')] });
    await store.runStatusSet({ lease, status: 'SUSPENDED' });
    call = nextCall();
    await store.journalResolve({ runId: run.id, suspensionSeq: 0, entry: resolution(true) });
    await call.promise;

    const held = await startRun(store);
    call = nextCall();
    await store.runLeaseRelease({ lease: held.lease });
    await call.promise;
    await unsubscribe();
  });

  it('follows a journal: history first, then live entries, each once and in order, until aborted', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('h0'), step('h1'), step('h2')] });
    const abort = new AbortController();
    const seen: JournalEntry[] = [];
    const done = (async () => {
      for await (const entry of journalFollow({ store, runId: run.id, afterSeq: 0, signal: abort.signal, pollMs: 60_000, batchSize: 2 })) {
        seen.push(entry);
        if (entry.name === 'live-9') abort.abort();
      }
    })();
    for (let i = 0; i < 10; i++) await store.journalAppend({ lease, entries: [step(`live-${i}`)] });
    await done;
    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(seen[0]!.name).toBe('h1');
  });

  it('ends a follow after the terminal status entry when asked', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('a')] });
    await store.runStatusSet({ lease, status: 'SUCCEEDED', output: 'done' });
    const seen: string[] = [];
    for await (const e of journalFollow({ store, runId: run.id, signal: new AbortController().signal, stopAfterTerminal: true })) {
      seen.push(e.name);
    }
    expect(seen).toEqual(['a', 'SUCCEEDED']);
  });
}
