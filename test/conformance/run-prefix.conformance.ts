import { expect, it } from 'vitest';
import { newEntry } from '../../src/journal/journal-entry.js';
import { runParams, step, suspension, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * runCreate with `journal` (RunCreateParams.journal): a run created with its first entries, as a
 * fork is created with its source's journal up to the fork point (docs/forks.md). The run and its
 * entries appear together; a repeated key writes none; open waits among them keep their deadline.
 */

const leaseFor = { holder: 'worker-a', ttlMs: TTL };

export function runPrefixSection({ h }: SuiteContext): void {
  it('writes the entries at seq 0, 1, … with the run, under its new lease', async () => {
    const { store } = h();
    const journal = [step('a', { payload: 1 }), newEntry({ kind: 'tool', name: 't', status: 'running', contentKey: 'ck:t', idempotencyKey: 'src-key' }),
      newEntry({ kind: 'tool', name: 't', status: 'ok', contentKey: 'ck:t', refSeq: 1, payload: { charged: true }, costUsd: 0.25 })];
    const { run, lease, created } = await store.runCreate(runParams({ leaseFor, journal, idempotencyKey: 'fork-1' }));
    expect(created).toBe(true);
    expect(run.nextSeq).toBe(3);
    const entries = await store.journalList({ runId: run.id, namespace: 'default' });
    expect(entries.map((e) => [e.seq, e.kind, e.status, e.refSeq, e.idempotencyKey])).toEqual([
      [0, 'step', 'ok', null, null], [1, 'tool', 'running', null, 'src-key'], [2, 'tool', 'ok', 1, null],
    ]);
    expect(entries[2]!.costUsd).toBe(0.25);
    // The lease holds: the next append goes at seq 3.
    const [next] = await store.journalAppend({ lease: lease!, entries: [step('b')] });
    expect(next!.seq).toBe(3);
    // A repeated key returns the first run and writes nothing more.
    const again = await store.runCreate(runParams({ leaseFor, journal, idempotencyKey: 'fork-1' }));
    expect(again.created).toBe(false);
    expect(again.run.id).toBe(run.id);
    expect(await store.journalList({ runId: run.id, namespace: 'default' })).toHaveLength(4);
  });

  it('an open wait among the entries keeps its deadline; a closed one does not', async () => {
    const { store, advance } = h();
    const deadlineAt = new Date(Date.now() + 60_000).toISOString();
    const journal = [
      suspension('closed', { payload: { key: 'closed', deadlineAt, onTimeout: null } }),
      newEntry({ kind: 'approval', name: 'closed', status: 'resolved', refSeq: 0, payload: { source: 'human', value: { approved: true } } }),
      suspension('open', { payload: { key: 'open', deadlineAt, onTimeout: null } }),
    ];
    const { run, lease } = await store.runCreate(runParams({ leaseFor, journal }));
    await store.runStatusSet({ lease: lease!, status: 'SUSPENDED' });
    await advance(120_000);
    const due = (await store.suspensionListDue({ limit: 10 })).filter((e) => e.runId === run.id);
    expect(due.map((e) => e.seq)).toEqual([2]);
  });

  it('refuses `journal` without a lease to write it under', async () => {
    const { store } = h();
    await expect(store.runCreate(runParams({ journal: [step('a')] }))).rejects.toThrow(TypeError);
  });

  it('runForks lists the runs labelled as forks of a run, newest first, in its namespace only', async () => {
    const { store, advance } = h();
    const { run: source } = await store.runCreate(runParams());
    const fork = (id: string, namespace = 'default') => store.runCreate(runParams({ namespace, labels: { 'waymark.fork_of': id, 'waymark.fork_seq': '2' } }));
    const first = (await fork(source.id)).run;
    await advance(1_000);
    const second = (await fork(source.id)).run;
    await fork(source.id, 'other');
    await fork(first.id);
    expect(await store.runForks({ runId: source.id, namespace: 'default', limit: 10 })).toEqual([second.id, first.id]);
    expect(await store.runForks({ runId: source.id, namespace: 'default', limit: 1 })).toEqual([second.id]);
    expect(await store.runForks({ runId: second.id, namespace: 'default', limit: 10 })).toEqual([]);
  });
}
