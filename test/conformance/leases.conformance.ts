import { expect, it } from 'vitest';
import { LeaseLostError, RunNotFoundError } from '../../src/journal/errors.js';
import { runParams, startRun, step, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

export function leasesSection({ h }: SuiteContext): void {
  it('acquires a PENDING run (RUNNING, epoch bumped), refuses while held, takes over once expired', async () => {
    const { store, advance } = h();
    const { run } = await store.runCreate(runParams());
    const a = await store.runLeaseAcquire({ runId: run.id, holder: 'a', ttlMs: TTL });
    expect(a).toMatchObject({ runId: run.id, holder: 'a', epoch: 1 });
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).status).toBe('RUNNING');
    expect(await store.runLeaseAcquire({ runId: run.id, holder: 'b', ttlMs: TTL })).toBeNull();
    await advance(TTL - 1_000);
    expect(await store.runLeaseAcquire({ runId: run.id, holder: 'b', ttlMs: TTL })).toBeNull();
    await advance(2_000);
    const b = await store.runLeaseAcquire({ runId: run.id, holder: 'b', ttlMs: TTL });
    expect(b).toMatchObject({ holder: 'b', epoch: 2 });
    expect(await store.runGet({ runId: run.id, namespace: 'default' })).toMatchObject({ leaseHolder: 'b', leaseEpoch: 2, status: 'RUNNING' });
  });

  it('renews: a renewed lease outlives its first expiry; an expired lease nobody took over still renews', async () => {
    const { store, advance } = h();
    const { run, lease } = await startRun(store);
    await advance(TTL * 0.6);
    const renewed = await store.runLeaseRenew({ lease, ttlMs: TTL });
    expect(renewed.epoch).toBe(lease.epoch);
    expect(renewed.expiresAt.getTime()).toBeGreaterThan(lease.expiresAt.getTime());
    await advance(TTL * 0.6);
    expect(await store.runLeaseAcquire({ runId: run.id, holder: 'b', ttlMs: TTL })).toBeNull();
    await advance(TTL * 2);
    // Expired but not taken over: the epoch is the fence, so the owner may still write and renew.
    await store.journalAppend({ lease, entries: [step('late but still owner')] });
    const again = await store.runLeaseRenew({ lease, ttlMs: TTL });
    expect(again.epoch).toBe(lease.epoch);
    expect(await store.runLeaseAcquire({ runId: run.id, holder: 'b', ttlMs: TTL })).toBeNull();
  });

  it('fences a stale holder: append, renew and status change throw LeaseLostError and write nothing', async () => {
    const { store, advance } = h();
    const { run, lease: stale } = await startRun(store);
    await store.journalAppend({ lease: stale, entries: [step('before')] });
    await advance(TTL + 1);
    const fresh = await store.runLeaseAcquire({ runId: run.id, holder: 'b', ttlMs: TTL });
    expect(fresh?.epoch).toBe(stale.epoch + 1);
    const lost = store.journalAppend({ lease: stale, entries: [step('stale')] });
    await expect(lost).rejects.toBeInstanceOf(LeaseLostError);
    await expect(lost).rejects.toMatchObject({ runId: run.id, epoch: stale.epoch, retryable: false });
    await expect(store.runStatusSet({ lease: stale, status: 'SUCCEEDED', output: 1 })).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.runLeaseRenew({ lease: stale, ttlMs: TTL })).rejects.toBeInstanceOf(LeaseLostError);
    await store.runLeaseRelease({ lease: stale }); // a fenced release does nothing
    expect((await store.journalList({ runId: run.id })).map((e) => e.name)).toEqual(['before']);
    expect(await store.runGet({ runId: run.id, namespace: 'default' })).toMatchObject({ status: 'RUNNING', leaseHolder: 'b', nextSeq: 1 });
    await store.journalAppend({ lease: fresh!, entries: [step('fresh')] });
  });

  it('releases: a RUNNING run goes back to PENDING and is claimable at once; the old lease is fenced', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.runLeaseRelease({ lease });
    expect(await store.runGet({ runId: run.id, namespace: 'default' })).toMatchObject({ status: 'PENDING', leaseHolder: null, leaseExpiresAt: null });
    await expect(store.journalAppend({ lease, entries: [step('after release')] })).rejects.toBeInstanceOf(LeaseLostError);
    const [claimed] = await store.runClaim({ holder: 'b', ttlMs: TTL, limit: 10 });
    expect(claimed).toMatchObject({ runId: run.id, holder: 'b', epoch: lease.epoch + 1 });
  });

  it('terminal and SUSPENDED statuses release the lease and fence its later writes', async () => {
    const { store } = h();
    for (const status of ['SUSPENDED', 'FAILED', 'CANCELLED', 'PENDING'] as const) {
      const { lease } = await startRun(store);
      const { run } = await store.runStatusSet({ lease, status });
      expect(run).toMatchObject({ status, leaseHolder: null, leaseExpiresAt: null });
      await expect(store.journalAppend({ lease, entries: [step('x')] })).rejects.toBeInstanceOf(LeaseLostError);
      await expect(store.runStatusSet({ lease, status: 'SUCCEEDED' })).rejects.toBeInstanceOf(LeaseLostError);
    }
  });

  it('acquires only in the given statuses, and clears a terminal run\'s outcome when resumed', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.runStatusSet({ lease, status: 'FAILED', error: { name: 'Boom', message: 'boom' } });
    expect(await store.runLeaseAcquire({ runId: run.id, holder: 'b', ttlMs: TTL })).toBeNull();
    const resumed = await store.runLeaseAcquire({ runId: run.id, holder: 'b', ttlMs: TTL, statuses: ['FAILED'] });
    expect(resumed?.epoch).toBe(2);
    expect(await store.runGet({ runId: run.id, namespace: 'default' })).toMatchObject({ status: 'RUNNING', error: null, output: null });
    const { run: suspended } = await store.runCreate(runParams());
    expect(await store.runLeaseAcquire({ runId: suspended.id, holder: 'b', ttlMs: TTL, statuses: ['SUSPENDED'] })).toBeNull();
  });

  it('acquires with the RUNNING entry in one step (runLeaseAcquireRunning): the same take, the entry runStatusSet would write', async () => {
    const { store, advance } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('a')] });
    await store.runStatusSet({ lease, status: 'FAILED', error: { name: 'Boom', message: 'boom' } });
    expect(await store.runLeaseAcquireRunning({ runId: run.id, holder: 'b', ttlMs: TTL })).toBeNull();
    expect(await store.runLeaseAcquireRunning({ runId: run.id, holder: 'b', ttlMs: TTL, statuses: ['SUSPENDED'] })).toBeNull();
    const before = await store.journalList({ runId: run.id });
    const taken = await store.runLeaseAcquireRunning({ runId: run.id, holder: 'b', ttlMs: TTL, statuses: ['FAILED'], namespace: 'default' });
    expect(taken?.lease).toMatchObject({ runId: run.id, holder: 'b', epoch: lease.epoch + 1 });
    expect(taken?.run).toMatchObject({ id: run.id, status: 'RUNNING', leaseHolder: 'b', leaseEpoch: lease.epoch + 1, output: null, error: null, nextSeq: before.length + 1 });
    expect(taken?.entry).toMatchObject({ runId: run.id, seq: before.length, kind: 'status', name: 'RUNNING', status: 'info', payload: { status: 'RUNNING' } });
    const journal = await store.journalList({ runId: run.id });
    expect(journal.slice(0, before.length)).toEqual(before);
    expect(journal[before.length]).toEqual(taken!.entry);
    expect(await store.runGet({ runId: run.id, namespace: 'default' })).toMatchObject({ status: 'RUNNING', leaseHolder: 'b', error: null });
    // Held: nobody else takes it, until it expires; the old holder is fenced.
    expect(await store.runLeaseAcquireRunning({ runId: run.id, holder: 'c', ttlMs: TTL, statuses: ['RUNNING'] })).toBeNull();
    await expect(store.journalAppend({ lease, entries: [step('stale')] })).rejects.toBeInstanceOf(LeaseLostError);
    await store.journalAppend({ lease: taken!.lease, entries: [step('b')] });
    await advance(TTL + 1_000);
    const c = await store.runLeaseAcquireRunning({ runId: run.id, holder: 'c', ttlMs: TTL });
    expect(c?.lease.epoch).toBe(lease.epoch + 2);
    await expect(store.runLeaseAcquireRunning({ runId: '00000000-0000-4000-8000-000000000000', holder: 'c', ttlMs: TTL })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.runLeaseAcquireRunning({ runId: run.id, holder: 'c', ttlMs: TTL, namespace: 'elsewhere' })).rejects.toBeInstanceOf(RunNotFoundError);
  });

  it('claims PENDING runs oldest first, up to the limit, within a namespace, never one run twice', async () => {
    const { store, advance } = h();
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      ids.push((await store.runCreate(runParams())).run.id);
      await advance(1);
    }
    const other = (await store.runCreate(runParams({ namespace: 'other' }))).run.id;
    await startRun(store); // RUNNING already: never claimed
    const first = await store.runClaim({ holder: 'a', ttlMs: TTL, limit: 5, namespace: 'default' });
    expect(first.map((l) => l.runId)).toEqual(ids.slice(0, 5));
    expect(first.every((l) => l.epoch === 1 && l.holder === 'a')).toBe(true);
    const concurrent = await Promise.all([1, 2, 3].map((n) => store.runClaim({ holder: `c${n}`, ttlMs: TTL, limit: 3, namespace: 'default' })));
    const claimed = concurrent.flat().map((l) => l.runId);
    expect(new Set(claimed).size).toBe(claimed.length);
    expect([...claimed].sort()).toEqual(ids.slice(5).sort());
    expect(await store.runClaim({ holder: 'a', ttlMs: TTL, limit: 5, namespace: 'default' })).toEqual([]);
    expect((await store.runClaim({ holder: 'a', ttlMs: TTL, limit: 5 })).map((l) => l.runId)).toEqual([other]);
    expect((await store.runGet({ runId: ids[0]!, namespace: 'default' })).status).toBe('RUNNING');
  });
}
