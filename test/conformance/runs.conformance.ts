import { expect, it } from 'vitest';
import { IdempotencyConflictError, RunNotFoundError } from '../../src/journal/errors.js';
import type { Run } from '../../src/journal/run.js';
import { runParams, startRun, step, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

export function runsSection({ h }: SuiteContext): void {
  it('runDigestSet re-pins the run and journals a drift entry at the next seq, fenced by the lease', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('a')] });
    const drift = { from: 'sha256:abc', to: 'sha256:def', policy: 'warn' as const, reason: 'no live replica serves the digest the run was pinned to' };
    const { run: after, entry } = await store.runDigestSet({ lease, drift });
    expect(after).toMatchObject({ id: run.id, workflowDigest: 'sha256:def', status: 'RUNNING', nextSeq: 2 });
    expect(entry).toMatchObject({ runId: run.id, seq: 1, kind: 'status', name: 'drift', status: 'info', payload: { drift } });
    expect(await store.runGet({ runId: run.id, namespace: 'default' })).toMatchObject({ workflowDigest: 'sha256:def' });
    // A holder fenced off by a takeover writes nothing.
    await store.runLeaseRelease({ lease });
    await expect(store.runDigestSet({ lease, drift: { ...drift, to: 'sha256:zzz' } })).rejects.toMatchObject({ name: 'LeaseLostError' });
    expect((await store.journalList({ runId: run.id })).map((e) => e.name)).toEqual(['a', 'drift']);
  });

  it('creates a PENDING run holding what it was given, with no lease and an empty journal', async () => {
    const { store } = h();
    const params = runParams({ labels: { team: 'billing' }, budgetUsd: 2.5, dryRun: true, idempotencyKey: 'k1' });
    const { run, created, lease } = await store.runCreate(params);
    expect(created).toBe(true);
    expect(lease).toBeNull();
    expect(run).toMatchObject({
      namespace: 'default', workflowName: 'refund', workflowVersion: '1', workflowDigest: 'sha256:abc',
      status: 'PENDING', input: params.input, output: null, error: null, labels: { team: 'billing' },
      idempotencyKey: 'k1', parentRunId: null, parentSeq: null, budgetUsd: 2.5, dryRun: true,
      leaseHolder: null, leaseExpiresAt: null, leaseEpoch: 0, nextSeq: 0, recoveryCount: 0, deadlineAt: null,
    });
    expect(await store.runGet({ runId: run.id, namespace: 'default' })).toEqual(run);
    expect(await store.journalList({ runId: run.id })).toEqual([]);
  });

  it('with leaseFor, creates the run RUNNING under a lease at epoch 1', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    expect(run.status).toBe('RUNNING');
    expect(lease).toMatchObject({ runId: run.id, holder: 'worker-a', epoch: 1 });
    expect(run.leaseEpoch).toBe(1);
    const now = await store.clockNow();
    expect(lease.expiresAt.getTime()).toBeGreaterThan(now.getTime() + TTL - 5_000);
  });

  it('with leaseFor.recordRunning, journals the RUNNING entry runStatusSet would write, in the same write', async () => {
    const { store } = h();
    const created = await store.runCreate(runParams({ idempotencyKey: 'rr-1', leaseFor: { holder: 'worker-a', ttlMs: TTL, recordRunning: true } }));
    expect(created.run).toMatchObject({ status: 'RUNNING', nextSeq: 1, leaseEpoch: 1 });
    expect(await store.runGet({ runId: created.run.id, namespace: 'default' })).toEqual(created.run);
    const [entry, ...rest] = await store.journalList({ runId: created.run.id });
    expect(rest).toEqual([]);
    // The same entry as a RUNNING status change by the lease holder writes on another run.
    const other = await startRun(store);
    const { entry: viaStatusSet } = await store.runStatusSet({ lease: other.lease, status: 'RUNNING' });
    const comparable = (e: typeof entry) => ({ ...e, runId: undefined, seq: undefined, createdAt: undefined });
    expect(comparable(entry!)).toEqual(comparable(viaStatusSet));
    expect(entry).toMatchObject({ seq: 0, kind: 'status', name: 'RUNNING', status: 'info', payload: { status: 'RUNNING' } });
    // The lease is the run's: an append goes in after the entry.
    const [appended] = await store.journalAppend({ lease: created.lease!, entries: [step('after')] });
    expect(appended!.seq).toBe(1);
    // A repeated key writes nothing, whatever it asks.
    const again = await store.runCreate(runParams({ idempotencyKey: 'rr-1', leaseFor: { holder: 'w', ttlMs: TTL, recordRunning: true } }));
    expect(again).toMatchObject({ created: false, lease: null });
    expect(await store.journalList({ runId: created.run.id })).toHaveLength(2);
  });

  it('addresses fail-closed: another namespace, an unknown id and a malformed id are all not found', async () => {
    const { store } = h();
    const { run } = await store.runCreate(runParams({ namespace: 'a' }));
    await expect(store.runGet({ runId: run.id, namespace: 'b' })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.runGet({ runId: '018f0000-0000-7000-8000-000000000000', namespace: 'a' }))
      .rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.runGet({ runId: 'not-a-uuid', namespace: 'a' })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.journalList({ runId: run.id, namespace: 'b' })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.journalList({ runId: 'nope' })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.runLeaseAcquire({ runId: run.id, namespace: 'b', holder: 'w', ttlMs: TTL }))
      .rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.runStatusForce({ runId: run.id, namespace: 'b', status: 'CANCELLED' }))
      .rejects.toBeInstanceOf(RunNotFoundError);
  });

  it('returns the first run for a repeated idempotency key; another namespace starts its own run', async () => {
    const { store } = h();
    const first = await store.runCreate(runParams({ idempotencyKey: 'order-1' }));
    const again = await store.runCreate(runParams({ idempotencyKey: 'order-1', input: { other: true }, leaseFor: { holder: 'w', ttlMs: TTL } }));
    expect(again.created).toBe(false);
    expect(again.lease).toBeNull();
    expect(again.run.id).toBe(first.run.id);
    expect(again.run.input).toEqual(first.run.input);
    const elsewhere = await store.runCreate(runParams({ idempotencyKey: 'order-1', namespace: 'other' }));
    expect(elsewhere.created).toBe(true);
    expect(elsewhere.run.id).not.toBe(first.run.id);
    await expect(store.runCreate(runParams({ idempotencyKey: 'order-1', workflowName: 'ship' })))
      .rejects.toBeInstanceOf(IdempotencyConflictError);
  });

  it('starts one run for concurrent creates with the same idempotency key', async () => {
    const { store } = h();
    const results = await Promise.all(Array.from({ length: 8 }, () => store.runCreate(runParams({ idempotencyKey: 'race' }))));
    expect(new Set(results.map((r) => r.run.id)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  it('lists newest first with filters, and pages with a cursor without skipping or repeating', async () => {
    const { store, advance } = h();
    const made: Run[] = [];
    for (let i = 0; i < 25; i++) {
      const { run } = await store.runCreate(runParams({
        workflowName: i % 2 ? 'odd' : 'even',
        labels: { parity: i % 2 ? 'odd' : 'even', ...(i % 5 === 0 ? { five: 'yes' } : {}) },
      }));
      made.push(run);
      if (i % 3 === 0) await advance(1); // a mix of distinct and equal createdAt values
    }
    await store.runCreate(runParams({ namespace: 'elsewhere' }));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { runs: Run[]; nextCursor: string | null } = await store.runList({ namespace: 'default', pageSize: 10, cursor });
      seen.push(...page.runs.map((r) => r.id));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(25);
    const expected = [...made].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1));
    expect(seen).toEqual(expected.map((r) => r.id));

    const odd = await store.runList({ namespace: 'default', pageSize: 100, workflowName: 'odd' });
    expect(odd.runs).toHaveLength(12);
    expect(odd.nextCursor).toBeNull();
    const fives = await store.runList({ namespace: 'default', pageSize: 100, labels: { five: 'yes', parity: 'odd' } });
    expect(fives.runs.map((r) => r.labels)).toEqual([{ parity: 'odd', five: 'yes' }, { parity: 'odd', five: 'yes' }]);
    const pending = await store.runList({ namespace: 'default', pageSize: 100, statuses: ['PENDING'] });
    expect(pending.runs).toHaveLength(25);
    expect((await store.runList({ namespace: 'default', pageSize: 100, statuses: ['RUNNING', 'FAILED'] })).runs).toEqual([]);
  });

  it('filters by parent run', async () => {
    const { store } = h();
    const { run: parent } = await store.runCreate(runParams());
    const { run: child } = await store.runCreate(runParams({ parentRunId: parent.id, parentSeq: 4 }));
    const { runs } = await store.runList({ namespace: 'default', pageSize: 10, parentRunId: parent.id });
    expect(runs.map((r) => [r.id, r.parentSeq])).toEqual([[child.id, 4]]);
  });

  it('forces a status: fences the holder off, releases the lease, journals it; no-op on a terminal run', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    const forced = await store.runStatusForce({ runId: run.id, namespace: 'default', status: 'CANCELLED', error: { name: 'Cancelled', message: 'by operator' } });
    expect(forced?.run).toMatchObject({ status: 'CANCELLED', leaseHolder: null, leaseEpoch: 2, error: { message: 'by operator' } });
    expect(forced?.entry).toMatchObject({ seq: 0, kind: 'status', name: 'CANCELLED', status: 'info', payload: { status: 'CANCELLED' } });
    await expect(store.journalAppend({ lease, entries: [step('late')] })).rejects.toMatchObject({ reason: 'LEASE_LOST' });
    expect(await store.runStatusForce({ runId: run.id, status: 'FAILED' })).toBeNull();
    expect((await store.journalList({ runId: run.id })).map((e) => e.name)).toEqual(['CANCELLED']);
  });

  it('refuses a child of an unknown parent, and a cursor it did not issue', async () => {
    const { store } = h();
    await expect(store.runCreate(runParams({ parentRunId: '018f0000-0000-7000-8000-000000000000', parentSeq: 1 })))
      .rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.runList({ namespace: 'default', pageSize: 10, cursor: 'garbage' })).rejects.toBeInstanceOf(TypeError);
    expect((await store.runList({ namespace: 'default', pageSize: 10 })).runs).toEqual([]);
  });
}
