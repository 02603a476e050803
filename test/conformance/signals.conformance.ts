import { expect, it } from 'vitest';
import { LeaseLostError, RunNotFoundError, RunStateError, UnstorableValueError } from '../../src/journal/errors.js';
import { newEntry, type NewJournalEntry } from '../../src/journal/journal-entry.js';
import type { JournalStore } from '../../src/store/store.js';
import { resolution, runParams, startRun, step, suspension, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/** A `signal` wait named `name`, as ctx.signal journals it. */
function signalWait(name: string, fields: Partial<NewJournalEntry> = {}): NewJournalEntry {
  return newEntry({ kind: 'signal', name, status: 'suspended', contentKey: `ck:signal:${name}`, ...fields });
}

function signalResolution(signalId: string, value: NewJournalEntry['payload']): NewJournalEntry {
  return newEntry({ kind: 'signal', name: 'sig', status: 'resolved', payload: { source: 'signal', value, signalId }, dedupeKey: `signal:${signalId}` });
}

function deliver(store: JournalStore, runId: string, signalId: string, target: { seq: number } | null = null, name = 'go') {
  return store.signalDeliver({
    runId, namespace: 'default', name, signalId, dedupeKey: `signal:${signalId}`, payload: { n: signalId },
    target: target ? { seq: target.seq, entry: signalResolution(signalId, { n: signalId }) } : null,
  });
}

/** The signal inbox (signalDeliver, signalInboxList, signalInboxConsume) and suspensionList. */
export function signalsSection({ h }: SuiteContext): void {
  it('buffers a signal for a run with no open wait of that name, once per signal id', async () => {
    const { store } = h();
    const { run } = await startRun(store);
    const first = await deliver(store, run.id, 's1');
    expect(first).toMatchObject({ outcome: 'buffered', signal: { runId: run.id, name: 'go', signalId: 's1', payload: { n: 's1' } } });
    expect(await deliver(store, run.id, 's1')).toMatchObject({ outcome: 'duplicate', entry: null, signal: { signalId: 's1' } });
    await deliver(store, run.id, 's2');
    await deliver(store, run.id, 'other', null, 'stop');
    expect((await store.signalInboxList({ runId: run.id })).map((s) => s.signalId)).toEqual(['s1', 's2', 'other']);
    expect((await store.signalInboxList({ runId: run.id, name: 'go', limit: 1 })).map((s) => s.signalId)).toEqual(['s1']);
    expect(await store.journalList({ runId: run.id })).toEqual([]);
    await expect(store.signalInboxList({ runId: run.id, namespace: 'other' })).rejects.toBeInstanceOf(RunNotFoundError);
  });

  it('resolves the open wait it was aimed at, waking a SUSPENDED run; a mismatched aim learns the open seq', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('a'), signalWait('go')] });
    await store.runStatusSet({ lease, status: 'SUSPENDED' });
    expect(await deliver(store, run.id, 's1')).toEqual({ outcome: 'wait_open', seq: 1 });
    expect(await deliver(store, run.id, 's1', { seq: 0 })).toEqual({ outcome: 'wait_open', seq: 1 });
    const resolved = await deliver(store, run.id, 's1', { seq: 1 });
    expect(resolved).toMatchObject({ outcome: 'resolved', entry: { seq: 3, status: 'resolved', refSeq: 1, dedupeKey: 'signal:s1' } });
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).status).toBe('PENDING');
    // The same id again is answered from the journal; a new one finds no open wait and is buffered.
    const again = await deliver(store, run.id, 's1', { seq: 1 });
    expect(again).toMatchObject({ outcome: 'duplicate', entry: { seq: 3 }, winner: { seq: 3 }, signal: null });
    expect(await deliver(store, run.id, 's2', { seq: 1 })).toMatchObject({ outcome: 'buffered' });
  });

  it('with leaseFor, takes the lease of the run it wakes in the same step: RUNNING under the holder, its RUNNING entry after the resolution', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('a'), signalWait('go'), signalWait('go')] });
    await store.runStatusSet({ lease, status: 'SUSPENDED' });
    const leaseFor = { holder: 'replica-a', ttlMs: TTL };
    const target = { seq: 1, entry: signalResolution('s1', { n: 's1' }) };
    const r = await store.signalDeliver({ runId: run.id, namespace: 'default', name: 'go', signalId: 's1', dedupeKey: 'signal:s1', payload: { n: 's1' }, target, leaseFor });
    expect(r).toMatchObject({ outcome: 'resolved', entry: { seq: 4, refSeq: 1 } });
    if (r.outcome !== 'resolved') throw new Error('not resolved');
    expect(r.taken?.lease).toMatchObject({ runId: run.id, holder: 'replica-a', epoch: lease.epoch + 1 });
    expect(r.taken?.run).toMatchObject({ status: 'RUNNING', leaseHolder: 'replica-a', nextSeq: 6 });
    expect(r.taken?.entry).toMatchObject({ seq: 5, kind: 'status', name: 'RUNNING' });
    expect((await store.journalList({ runId: run.id, afterSeq: 3 })).map((e) => `${e.seq} ${e.kind} ${e.status}`)).toEqual(['4 signal resolved', '5 status info']);
    // Nobody else claims it, and the old holder is fenced; the taker writes.
    expect(await store.runClaim({ holder: 'replica-b', ttlMs: TTL, limit: 10 })).toEqual([]);
    await expect(store.journalAppend({ lease, entries: [step('stale')] })).rejects.toBeInstanceOf(LeaseLostError);
    await store.journalAppend({ lease: r.taken!.lease, entries: [step('b')] });
    // While RUNNING, the next delivery takes nothing (the run is flagged: its SUSPENDED becomes PENDING).
    const second = await store.signalDeliver({
      runId: run.id, namespace: 'default', name: 'go', signalId: 's2', dedupeKey: 'signal:s2', payload: { n: 's2' },
      target: { seq: 2, entry: signalResolution('s2', { n: 's2' }) }, leaseFor,
    });
    expect(second).toMatchObject({ outcome: 'resolved', taken: null });
    expect((await store.runStatusSet({ lease: r.taken!.lease, status: 'SUSPENDED' })).run.status).toBe('PENDING');
    // Buffered (no open wait): nothing taken.
    expect(await store.signalDeliver({ runId: run.id, namespace: 'default', name: 'go', signalId: 's3', dedupeKey: 'signal:s3', payload: 1, target: null, leaseFor }))
      .toMatchObject({ outcome: 'buffered' });
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).leaseHolder).toBeNull();
  });

  it('finds the oldest open wait of a kind and name: resolved and cancelled waits are closed, a noop is not', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    const oldest = (name: string, kind: 'signal' | 'approval' = 'signal') =>
      store.suspensionOpenOldest({ runId: run.id, namespace: 'default', kind, name });
    expect(await oldest('go')).toBeNull();
    await store.journalAppend({ lease, entries: [
      signalWait('go', { occurrence: 0 }), // 0: resolved below
      step('a'), // 1
      signalWait('go', { occurrence: 1 }), // 2: cancelled below
      signalWait('other'), // 3: another name
      suspension('go'), // 4: another kind with the same name
      signalWait('go', { occurrence: 2, scope: 'par:0:1' }), // 5: open (scope does not matter)
      signalWait('go', { occurrence: 3 }), // 6: open
    ] });
    expect(await oldest('go')).toMatchObject({ runId: run.id, seq: 0, kind: 'signal', name: 'go', status: 'suspended' });
    await store.journalResolve({ runId: run.id, suspensionSeq: 0, entry: signalResolution('s0', 1) });
    expect((await oldest('go'))?.seq).toBe(2);
    await store.journalAppend({ lease, entries: [newEntry({ kind: 'signal', name: 'go', status: 'cancelled', contentKey: 'ck:signal:go', occurrence: 1, refSeq: 2 })] });
    const open = await oldest('go');
    expect(open).toEqual((await store.journalList({ runId: run.id }))[5]);
    expect(open).toMatchObject({ seq: 5, scope: 'par:0:1' });
    // A refused buffered signal (a noop) leaves the wait open; the winning one closes it.
    await deliver(store, run.id, 'bad');
    await store.signalInboxConsume({ lease, signalId: 'bad', suspensionSeq: 5, entry: signalResolution('bad', 'x'), valid: false });
    expect((await oldest('go'))?.seq).toBe(5);
    await store.journalResolve({ runId: run.id, suspensionSeq: 5, entry: signalResolution('s5', 5) });
    expect((await oldest('go'))?.seq).toBe(6);
    expect((await oldest('other'))?.seq).toBe(3);
    expect((await oldest('go', 'approval'))?.seq).toBe(4);
    expect(await oldest('nothing')).toBeNull();
    // Without a namespace any run is found; the run's status does not matter.
    await store.runStatusSet({ lease, status: 'SUSPENDED' });
    expect((await store.suspensionOpenOldest({ runId: run.id, kind: 'signal', name: 'go' }))?.seq).toBe(6);
    await store.journalResolve({ runId: run.id, suspensionSeq: 6, entry: signalResolution('s6', 6) });
    expect(await oldest('go')).toBeNull();
  });

  it('suspensionOpenOldest: RunNotFoundError for an unknown or malformed run id, or another namespace', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [signalWait('go')] });
    for (const params of [
      { runId: run.id, namespace: 'other' },
      { runId: '01890000-0000-7000-8000-000000000000', namespace: 'default' },
      { runId: '01890000-0000-7000-8000-000000000000' },
      { runId: 'not-a-run-id', namespace: 'default' },
    ]) {
      await expect(store.suspensionOpenOldest({ ...params, kind: 'signal', name: 'go' })).rejects.toBeInstanceOf(RunNotFoundError);
    }
  });

  it('keeps arrival order: while signals of a name are buffered, a new one queues behind them even if a wait is open', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await deliver(store, run.id, 'early');
    await store.journalAppend({ lease, entries: [signalWait('go')] });
    expect(await deliver(store, run.id, 'late', { seq: 0 })).toMatchObject({ outcome: 'buffered' });
    expect((await store.signalInboxList({ runId: run.id, name: 'go' })).map((s) => s.signalId)).toEqual(['early', 'late']);
  });

  it('consumes a buffered signal into the holder\'s wait (fenced); an invalid one becomes a noop; a decided wait keeps it', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    for (const id of ['bad', 'good', 'spare']) await deliver(store, run.id, id);
    await store.journalAppend({ lease, entries: [signalWait('go')] });
    const bad = await store.signalInboxConsume({ lease, signalId: 'bad', suspensionSeq: 0, entry: signalResolution('bad', 1), valid: false });
    expect(bad).toMatchObject({ entry: { seq: 1, status: 'noop', refSeq: 0, dedupeKey: 'signal:bad' }, winner: null });
    const good = await store.signalInboxConsume({ lease, signalId: 'good', suspensionSeq: 0, entry: signalResolution('good', 2), valid: true });
    expect(good.entry).toMatchObject({ seq: 2, status: 'resolved', refSeq: 0 });
    expect(good.winner).toEqual(good.entry);
    const kept = await store.signalInboxConsume({ lease, signalId: 'spare', suspensionSeq: 0, entry: signalResolution('spare', 3), valid: true });
    expect(kept).toEqual({ entry: null, winner: good.entry });
    expect((await store.signalInboxList({ runId: run.id })).map((s) => s.signalId)).toEqual(['spare']);
    expect(await store.signalInboxConsume({ lease, signalId: 'gone', suspensionSeq: 0, entry: signalResolution('gone', 4), valid: true }))
      .toEqual({ entry: null, winner: null });
    // Not flagged: the holder's park is a real park.
    expect((await store.runStatusSet({ lease, status: 'SUSPENDED' })).run.status).toBe('SUSPENDED');
    // The consumed ids stay delivered.
    expect(await deliver(store, run.id, 'bad')).toMatchObject({ outcome: 'duplicate', entry: { status: 'noop' } });
  });

  it('refuses a consume by a fenced holder and a signal to a finished run, writing nothing', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await deliver(store, run.id, 's1');
    await store.journalAppend({ lease, entries: [signalWait('go')] });
    await store.runStatusForce({ runId: run.id, status: 'CANCELLED' });
    await expect(store.signalInboxConsume({ lease, signalId: 's1', suspensionSeq: 0, entry: signalResolution('s1', 1), valid: true }))
      .rejects.toBeInstanceOf(LeaseLostError);
    await expect(deliver(store, run.id, 's2')).rejects.toBeInstanceOf(RunStateError);
    expect(await deliver(store, run.id, 's1')).toMatchObject({ outcome: 'duplicate' });
    expect((await store.journalList({ runId: run.id })).map((e) => e.kind)).toEqual(['signal', 'status']);
  });

  it('refuses the NUL character in payloads, labels and signal names before writing anything', async () => {
    const { store } = h();
    await expect(store.runCreate(runParams({ input: { note: 'a\u0000b' } }))).rejects.toMatchObject({ field: 'input.note' });
    await expect(store.runCreate(runParams({ labels: { team: 'x\u0000' } }))).rejects.toBeInstanceOf(UnstorableValueError);
    expect((await store.runList({ namespace: 'default', pageSize: 10 })).runs).toEqual([]);
    const { run, lease } = await startRun(store);
    await expect(store.journalAppend({ lease, entries: [step('a', { payload: ['ok', { 'k\u0000': 1 }] })] }))
      .rejects.toBeInstanceOf(UnstorableValueError);
    await store.journalAppend({ lease, entries: [suspension('wait')] });
    await expect(store.journalResolve({ runId: run.id, suspensionSeq: 0, entry: resolution({ text: '\u0000' }) }))
      .rejects.toMatchObject({ field: 'entry.payload.text' });
    await expect(store.runStatusSet({ lease, status: 'SUCCEEDED', output: '\u0000' })).rejects.toBeInstanceOf(UnstorableValueError);
    await expect(store.signalDeliver({ runId: run.id, name: 'go', signalId: 's', dedupeKey: 'signal:s', payload: '\u0000', target: null }))
      .rejects.toMatchObject({ field: 'payload' });
    await expect(store.signalDeliver({ runId: run.id, name: 'g\u0000', signalId: 's', dedupeKey: 'signal:s', payload: 1, target: null }))
      .rejects.toBeInstanceOf(UnstorableValueError);
    // A backslash followed by "u0000" is ordinary text.
    await store.journalAppend({ lease, entries: [step('escaped', { payload: '\\u0000' })] });
    expect((await store.journalList({ runId: run.id })).map((e) => e.name)).toEqual(['wait', 'escaped']);
    expect(await store.signalInboxList({ runId: run.id })).toEqual([]);
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).status).toBe('RUNNING');
  });

  it('lists suspensions across runs oldest first, filtered and paged, with their winners and state facts', async () => {
    const { store, advance } = h();
    const a = await startRun(store, { labels: { team: 'billing' } });
    await store.journalAppend({ lease: a.lease, entries: [suspension('a1'), suspension('a2'), signalWait('go')] });
    await advance(10);
    const b = await startRun(store, { workflowName: 'other', labels: { team: 'ops' } });
    await store.journalAppend({ lease: b.lease, entries: [suspension('b1')] });
    await store.runStatusSet({ lease: b.lease, status: 'SUSPENDED' });
    await store.journalResolve({ runId: a.run.id, suspensionSeq: 1, entry: resolution({ approved: true }, 'r1') });
    const other = await store.runCreate(runParams({ namespace: 'elsewhere' }));
    expect(other.created).toBe(true);

    const all = await store.suspensionList({ namespace: 'default', kinds: ['approval'], pageSize: 10 });
    expect(all.items.map((i) => i.entry.name)).toEqual(['a1', 'a2', 'b1']);
    expect(all.nextCursor).toBeNull();
    expect(all.items[1]).toMatchObject({ winner: { status: 'resolved', refSeq: 1 }, superseded: false,
      run: { id: a.run.id, workflowName: 'refund', status: 'RUNNING', labels: { team: 'billing' } } });

    const open = await store.suspensionList({ namespace: 'default', kinds: ['approval'], open: true, pageSize: 10 });
    expect(open.items.map((i) => i.entry.name)).toEqual(['a1', 'b1']);
    const closed = await store.suspensionList({ namespace: 'default', kinds: ['approval'], open: false, pageSize: 10 });
    expect(closed.items.map((i) => i.entry.name)).toEqual(['a2']);
    expect((await store.suspensionList({ namespace: 'default', pageSize: 10 })).items).toHaveLength(4);
    const filtered = async (p: Partial<Parameters<JournalStore['suspensionList']>[0]>) =>
      (await store.suspensionList({ namespace: 'default', kinds: ['approval'], pageSize: 10, ...p })).items.map((i) => i.entry.name);
    expect(await filtered({ runId: b.run.id })).toEqual(['b1']);
    expect(await filtered({ runId: 'not-a-run' })).toEqual([]);
    expect(await filtered({ workflowName: 'other' })).toEqual(['b1']);
    expect(await filtered({ labels: { team: 'billing' } })).toEqual(['a1', 'a2']);
    expect(await filtered({ namespace: 'elsewhere' })).toEqual([]);

    // Paging by one visits each exactly once, even for entries written in the same instant.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await store.suspensionList({ namespace: 'default', kinds: ['approval'], pageSize: 1, cursor });
      seen.push(...page.items.map((i) => i.entry.name));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(['a1', 'a2', 'b1']);
    await expect(store.suspensionList({ namespace: 'default', pageSize: 1, cursor: 'garbage' })).rejects.toBeInstanceOf(TypeError);

    // An ended run's waits are no longer open; an invalidated wait is superseded.
    await store.journalAppend({
      lease: a.lease, entries: [newEntry({ kind: 'approval', name: 'a1', status: 'cancelled', contentKey: 'ck:a1', refSeq: 0 })],
    });
    expect((await store.suspensionList({ namespace: 'default', kinds: ['approval'], runId: a.run.id, pageSize: 10 })).items[0])
      .toMatchObject({ superseded: true, winner: null });
    await store.runStatusForce({ runId: b.run.id, status: 'CANCELLED' });
    expect(await filtered({ open: true })).toEqual([]);
  });
}
